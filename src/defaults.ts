/**
 * Every default errand uses, exported once: the library fills options in from here and
 * the CLI prints its help from here, so the two cannot disagree.
 */

import type { RetryPolicy } from "./retry-policy.js";

/**
 * Backoff between attempts: 30 s after the first failure, doubling, at most 1 hour,
 * times a 0.5–1.0 jitter. With {@link defaultMaxAttempts} that rides out a 20-minute
 * outage even if the jitter rolls its minimum every time.
 */
export const defaultRetryPolicy: RetryPolicy = Object.freeze({
  baseDelayMs: 30_000,
  maxDelayMs: 3_600_000,
  factor: 2,
  jitter: 0.5,
});

/** Attempts before a job is dead. */
export const defaultMaxAttempts = 8;

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

/** Handlers a worker runs at once. */
export const defaultConcurrency = 10;

/** A worker's fallback poll when no notification arrives. */
export const defaultPollIntervalMs = 1_000;

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
