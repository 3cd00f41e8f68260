import type { ResolvedKind } from "../options.js";
import { resolveWorkerQueues } from "../queues.js";
import { defaultFlushDelayMs, defaultLeaseMs, defaultMaxResultBytes, defaultProgressIntervalMs, defaultPollIntervalMs, defaultRescueIntervalMs, defaultShutdownTimeoutMs } from "../defaults.js";
import { checkKeys, integerIn, nonNegativeMs, positiveMs } from "../validate.js";
import { ValidationError } from "../errors.js";
import type { ClaimedJob } from "./executor.js";
import type { Handlers } from "./handlers.js";

/** How a worker runs. Every field has a default that suits most apps. */
export interface WorkerOptions {
  /** Handlers by job kind. The worker claims only jobs of these kinds. */
  readonly handlers: Handlers;
  /** Handlers running at once, for a worker of the `default` queue. Default 10. */
  readonly concurrency?: number;
  /**
   * The queues this worker serves, each with its own concurrency (handlers at once), e.g.
   * `{ email: 10, media: 2 }`. Default `{ default: concurrency }`. It claims no job of a
   * queue not listed. Give this or `concurrency`, not both.
   */
  readonly queues?: Readonly<Record<string, number>>;
  /**
   * Extra jobs claimed ahead into a local buffer (leased, not started: no attempt spent
   * until they start). Default: adaptive — about as many jobs as this worker finished in
   * the last quarter second, at most 4000 and none while it finishes nothing, so fast jobs
   * are claimed in big batches and slow ones are not hoarded; a buffered job waits at most
   * 1 s (`maxBufferWaitMs`) before it is given back to other workers. A fixed number turns
   * adaptation off, and buffered jobs then wait for a free slot.
   */
  readonly prefetch?: number;
  /** Lease for kinds without their own `leaseMs`. Default 5 minutes. */
  readonly leaseMs?: number;
  /** Fallback poll when no notification arrives. Default 1000 ms. */
  readonly pollIntervalMs?: number;
  /** How long `stop()` lets running handlers finish before aborting them. Default 25 s. */
  readonly shutdownTimeoutMs?: number;
  /** How often leases are extended. Default a third of the shortest lease. */
  readonly heartbeatIntervalMs?: number;
  /** How often expired leases are rescued (0 = never, e.g. when another process does it). Default 30 s. */
  readonly rescueIntervalMs?: number;
  /** How long an outcome may wait to join a batch write. Default 2 ms. */
  readonly flushDelayMs?: number;
  /**
   * Largest result a handler may return, in bytes of JSON. Default 256 KiB. A larger one
   * (or one that is not plain JSON) fails the attempt with an error naming `result`.
   */
  readonly maxResultBytes?: number;
  /** How often progress reported with `ctx.progress()` is written: at most once per job per interval. Default 500 ms. */
  readonly progressIntervalMs?: number;
  /** This worker's name in `locked_by`. Default `host:pid:random`. */
  readonly workerId?: string;
  /** Receives every job outcome and worker event (for logs and tests). */
  readonly onEvent?: (event: WorkerEvent) => void;
}

/** What a worker reports through `onEvent`. */
export type WorkerEvent =
  | { readonly type: "started"; readonly workerId: string }
  | { readonly type: "stopped"; readonly workerId: string; readonly released: number }
  | { readonly type: "job_done"; readonly job: ClaimedJob; readonly durationMs: number }
  | { readonly type: "job_failed"; readonly job: ClaimedJob; readonly durationMs: number; readonly error: string; readonly retryInMs: number }
  | { readonly type: "job_dead"; readonly job: ClaimedJob; readonly durationMs: number; readonly error: string }
  | { readonly type: "job_snoozed"; readonly job: ClaimedJob; readonly delayMs: number }
  | { readonly type: "lease_lost"; readonly jobIds: readonly string[] }
  /** Jobs cancelled while this worker held them: their handlers were aborted; nothing is written. */
  | { readonly type: "jobs_cancelled"; readonly jobIds: readonly string[] }
  /** A handler ran past its maximum run time; the attempt fails (reported as job_failed or job_dead too). */
  | { readonly type: "job_timed_out"; readonly job: ClaimedJob; readonly timeoutMs: number }
  | { readonly type: "listen_restored" }
  | { readonly type: "rescued"; readonly ready: number; readonly dead: number }
  | { readonly type: "error"; readonly during: string; readonly error: unknown };

/** {@link WorkerOptions} validated, with every default filled in. */
export interface WorkerSettings {
  /** Queue → handlers at once, in the order given. */
  readonly queues: ReadonlyMap<string, number>;
  /** A fixed prefetch, or undefined for adaptive. */
  readonly prefetch: number | undefined;
  readonly leaseMs: number;
  /** Kind → lease ms, as JSON for the claim and heartbeat statements. */
  readonly leasesByKind: string;
  readonly pollIntervalMs: number;
  readonly shutdownTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  /** How often the worker checks its own idea of its leases (see LocalLeases). */
  readonly leaseCheckMs: number;
  readonly rescueIntervalMs: number;
  readonly flushDelayMs: number;
  readonly maxResultBytes: number;
  readonly progressIntervalMs: number;
}

/** Validates worker options (errors name the field) and fills in defaults. */
export function resolveWorkerOptions(options: WorkerOptions, kinds: ReadonlyMap<string, ResolvedKind>): WorkerSettings {
  checkKeys(options, "", ["handlers", "concurrency", "queues", "prefetch", "leaseMs", "pollIntervalMs", "shutdownTimeoutMs", "heartbeatIntervalMs", "rescueIntervalMs", "flushDelayMs", "maxResultBytes", "progressIntervalMs", "workerId", "onEvent"]);
  if (typeof options.handlers !== "object" || options.handlers === null) throw new ValidationError("handlers", "must be an object mapping kind → async function");
  for (const [kind, handler] of Object.entries(options.handlers)) {
    if (typeof handler !== "function") throw new ValidationError(`handlers.${kind}`, "must be a function");
  }
  const queues = resolveWorkerQueues(options.queues, options.concurrency);
  const leaseMs = positiveMs(options.leaseMs ?? defaultLeaseMs, "leaseMs");
  const leases: Record<string, number> = {};
  for (const [kind, settings] of kinds) if (settings.leaseMs !== undefined) leases[kind] = settings.leaseMs;
  const shortest = Math.min(leaseMs, ...Object.values(leases));
  const heartbeatIntervalMs = positiveMs(options.heartbeatIntervalMs ?? Math.max(50, shortest / 3), "heartbeatIntervalMs");
  if (heartbeatIntervalMs >= shortest) throw new ValidationError("heartbeatIntervalMs", `must be shorter than the shortest lease (${shortest} ms)`);
  return {
    queues,
    prefetch: options.prefetch === undefined ? undefined : count(options.prefetch, "prefetch", 0),
    leaseMs,
    leasesByKind: JSON.stringify(leases),
    pollIntervalMs: positiveMs(options.pollIntervalMs ?? defaultPollIntervalMs, "pollIntervalMs"),
    shutdownTimeoutMs: nonNegativeMs(options.shutdownTimeoutMs ?? defaultShutdownTimeoutMs, "shutdownTimeoutMs"),
    heartbeatIntervalMs,
    // Often enough to stop a handler a little before a lease that heartbeats could not extend runs out.
    leaseCheckMs: Math.max(10, Math.min(heartbeatIntervalMs, shortest - heartbeatIntervalMs) / 4),
    rescueIntervalMs: nonNegativeMs(options.rescueIntervalMs ?? defaultRescueIntervalMs, "rescueIntervalMs"),
    flushDelayMs: nonNegativeMs(options.flushDelayMs ?? defaultFlushDelayMs, "flushDelayMs"),
    // PostgreSQL refuses jsonb values over 255 MiB; a result near that belongs elsewhere anyway.
    maxResultBytes: integerIn(options.maxResultBytes ?? defaultMaxResultBytes, "maxResultBytes", 1, 64 * 1024 * 1024),
    progressIntervalMs: positiveMs(options.progressIntervalMs ?? defaultProgressIntervalMs, "progressIntervalMs"),
  };
}

function count(value: unknown, field: string, min: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > 10_000) {
    throw new ValidationError(field, `must be an integer from ${min} to 10000 (got ${JSON.stringify(value)})`);
  }
  return value;
}
