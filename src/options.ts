import { defaultMaxAttempts, defaultPriority, defaultQueue } from "./defaults.js";
import { type RetryPolicy, resolveRetryPolicy } from "./retry-policy.js";
import { checkConcurrencyKey } from "./limits.js";
import { checkKeys, checkMaxAttempts, checkQueueName, integer, positiveMs, timeoutMs } from "./validate.js";


/** Settings for one job kind, shared by producers (defaults) and workers. */
export interface KindOptions {
  /** Attempts before the job is dead. Default 8. */
  readonly maxAttempts?: number;
  /** Backoff between attempts. Default: 30 s doubling, 1 h cap, ×0.5–1.0 jitter. */
  readonly retry?: Partial<RetryPolicy>;
  /** Lease (visibility timeout) in ms: set it from the slowest acceptable run. Default 5 minutes. */
  readonly leaseMs?: number;
  /** Default priority for jobs of this kind (higher runs first). Default 0. */
  readonly priority?: number;
  /**
   * Maximum run time of one attempt in ms, enforced by the worker: at the deadline the
   * handler's signal aborts and the attempt fails ("timed out after N ms", retried as
   * usual). Not the lease, which heartbeats extend while the handler runs. Default 30 minutes.
   */
  readonly timeoutMs?: number;
  /**
   * The concurrency key of this kind's jobs unless an enqueue gives its own: with a limit
   * on that key (`errand.limits.set`), a limit for the whole kind. Default: none.
   */
  readonly concurrencyKey?: string;
  /** The queue this kind's jobs go to, unless an enqueue names another. Default `default`. */
  readonly queue?: string;
}

/** {@link KindOptions} with defaults filled in. */
export interface ResolvedKind {
  readonly maxAttempts: number;
  readonly retry: RetryPolicy;
  readonly leaseMs: number | undefined;
  readonly priority: number;
  /** Undefined: the worker's default applies. */
  readonly timeoutMs: number | undefined;
  readonly queue: string;
  readonly concurrencyKey?: string | undefined;
}

/** Validates every kind's options once, at construction; errors name `<parent>.<kind>.<option>`. */
export function resolveKinds(kinds: Readonly<Record<string, KindOptions>> | undefined, parent = "kinds"): ReadonlyMap<string, ResolvedKind> {
  const resolved = new Map<string, ResolvedKind>();
  for (const [kind, options] of Object.entries(kinds ?? {})) {
    const field = `${parent}.${kind}`;
    checkKeys(options, field, ["maxAttempts", "retry", "leaseMs", "priority", "timeoutMs", "queue", "concurrencyKey"]);
    resolved.set(kind, {
      maxAttempts: options.maxAttempts === undefined ? defaultMaxAttempts : checkMaxAttempts(options.maxAttempts, `${field}.maxAttempts`),
      retry: resolveRetryPolicy(options.retry, `${field}.retry`),
      leaseMs: options.leaseMs === undefined ? undefined : positiveMs(options.leaseMs, `${field}.leaseMs`),
      priority: options.priority === undefined ? defaultPriority : integer(options.priority, `${field}.priority`),
      timeoutMs: options.timeoutMs === undefined ? undefined : timeoutMs(options.timeoutMs, `${field}.timeoutMs`),
      queue: options.queue === undefined ? defaultQueue : checkQueueName(options.queue, `${field}.queue`),
      concurrencyKey: options.concurrencyKey === undefined ? undefined : checkConcurrencyKey(options.concurrencyKey, `${field}.concurrencyKey`),
    });
  }
  return resolved;
}
