/**
 * Every default errand uses, exported once: the library fills options in from here and
 * the CLI prints its help from here, so the two cannot disagree.
 */

export { defaultMaxAttempts, defaultRetryPolicy } from "./retry-policy.js";

/** Schema holding errand's tables. */
export const defaultSchema = "errand";

/** The embedded database's folder. */
export const defaultDataDir = ".errand/data";

/** Connections in the pool errand creates from a `connectionString`. */
export const defaultPoolSize = 10;

/** Largest payload accepted: 256 KiB of JSON text. */
export const defaultMaxPayloadBytes = 256 * 1024;

/** Priority of a job whose kind sets none (higher runs first). */
export const defaultPriority = 0;

/** Lease (visibility timeout) of a kind without its own: 5 minutes. */
export const defaultLeaseMs = 5 * 60_000;

/**
 * Maximum run time of a job whose kind and enqueue set none: 30 minutes. Distinct from the
 * lease, which heartbeats extend for as long as the handler runs: without a maximum, a
 * handler that never settles (a hung HTTP call) would hold its job and its slot forever.
 * 30 minutes is far beyond a typical job and still frees a stuck slot the same hour; set
 * `timeoutMs` per kind for anything that should fail sooner, or legitimately runs longer.
 */
export const defaultTimeoutMs = 30 * 60_000;

/**
 * After a handler's maximum run time (or a cancel) fires its signal, how long the worker
 * waits for it to settle before it records the outcome anyway and frees the slot: a late
 * result is then ignored.
 */
export const abortGraceMs = 1_000;

/** Handlers a worker runs at once. */
export const defaultConcurrency = 10;

/** A worker's fallback poll when no notification arrives. */
export const defaultPollIntervalMs = 1_000;

/**
 * A listening worker's poll at rest (no job due, none held back by a limit), for its jobs
 * and its pauses, when no notification arrives. Every insert notifies while a worker
 * waits (see src/worker/waiting.ts), a lost notification means a lost connection, and a
 * reconnected worker looks at once: this poll
 * only covers what no notification announces (a job made ready by an UPDATE outside
 * errand, a connection that died without a word).
 */
export const restingPollMs = 30_000;

/**
 * How long every producer of a worker must keep finding jobs before the worker stops
 * waiting for the insert trigger's notices (src/worker/waiting.ts): inserts then commit
 * without NOTIFY's lock. Checked on the worker's 1 s timer.
 */
export const busyBeforeQuietMs = 1_000;

/**
 * How many insert notices a busy worker must hear within that second to stop waiting: a
 * worker stops only while inserts notify often, since coming back to waiting costs a
 * round of claims (src/worker/waiting.ts); a few notices a second queue on no lock.
 */
export const noticesBeforeQuiet = 50;

/** How long a stopping worker lets running handlers finish: under Kubernetes' 30 s grace. */
export const defaultShutdownTimeoutMs = 25_000;

/** How often a worker rescues expired leases. */
export const defaultRescueIntervalMs = 30_000;

/** How long an outcome may wait to join a batch write. */
export const defaultFlushDelayMs = 2;

/** Largest result a handler may return: 256 KiB of JSON text, as for payloads. */
export const defaultMaxResultBytes = 256 * 1024;

/** Largest value `ctx.progress()` accepts: 4 KiB of JSON text (a figure or a small object, not data). */
export const maxProgressBytes = 4 * 1024;

/** How often a worker writes the progress its handlers reported: at most once per job per interval. */
export const defaultProgressIntervalMs = 500;

/** How long done jobs are kept: 7 days. */
export const defaultRetentionMs = 7 * 86_400_000;

/** Rows per DELETE when pruning: each batch is its own short transaction. */
export const defaultPurgeBatchSize = 1000;

/**
 * The share of its time a purge spends deleting: after each batch it rests about seven times
 * as long as the batch took, so beside busy workers it takes about an eighth of one
 * connection and of one core (at full speed, 0.8 of a core took 15–38 % off processing on 2
 * cores; at 0.2, 0.17 of a core took up to 11 %). Deleting by ctid made a batch cheaper, so
 * at 0.12 it deletes about as many rows a second as at 0.2 before.
 */
export const defaultPurgeDutyCycle = 0.12;

/** How often a worker process prunes. */
export const defaultPurgeIntervalMs = 3_600_000;

/** Dead jobs listed at once by `dead.list` and `errand dead list`. */
export const defaultDeadListLimit = 100;

/** Seconds between refreshes of `errand stats --watch`. */
export const defaultWatchMs = 2_000;

/**
 * `errand metrics`' bind address: loopback, like the dashboard's, since /metrics has no
 * authentication and names every kind; a scraper on another host needs `--host`.
 */
export const defaultMetricsHost = "127.0.0.1";

/** The dashboard's port. */
export const defaultDashboardPort = 4000;

/** The dashboard's bind address: loopback, as nothing else is safe without authentication. */
export const defaultDashboardHost = "127.0.0.1";

/** Seconds between the dashboard overview's refreshes in the browser. */
export const defaultRefreshSeconds = 5;

/** Rows per page in the dashboard's job lists. */
export const defaultPageSize = 50;

/** The queue of a job whose kind and enqueue name none (and of a plain-SQL INSERT). */
export const defaultQueue = "default";

/** How often a worker reads the paused queues and kinds again when no notice came: a pause takes effect within about this. */
export const pausePollMs = 1_000;

/** How long `errand.stats()` waits for a JetStream queue's figures before reporting it unreachable. */
export const defaultJetStreamStatsTimeoutMs = 2_000;
