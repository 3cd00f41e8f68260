import { ValidationError, closest } from "./errors.js";
import { type RetryPolicy, checkMaxAttempts, defaultMaxAttempts, resolveRetryPolicy } from "./retry-policy.js";

/** Settings for one job kind, shared by producers (defaults) and workers. */
export interface KindOptions {
  /** Attempts before the job is dead. Default 8. */
  readonly maxAttempts?: number;
  /** Backoff between attempts. Default: the seed's 30 s doubling, 1 h cap, ×0.5–1.0 jitter. */
  readonly retry?: Partial<RetryPolicy>;
  /** Lease (visibility timeout) in ms: set it from the slowest acceptable run. Default 5 minutes. */
  readonly leaseMs?: number;
  /** Default priority for jobs of this kind (higher runs first). Default 0. */
  readonly priority?: number;
}

/** {@link KindOptions} with defaults filled in. */
export interface ResolvedKind {
  readonly maxAttempts: number;
  readonly retry: RetryPolicy;
  readonly leaseMs: number | undefined;
  readonly priority: number;
}

/** Default lease: 5 minutes, as in the seed. */
export const defaultLeaseMs = 5 * 60_000;

/** Validates every kind's options once, at construction. */
export function resolveKinds(kinds: Readonly<Record<string, KindOptions>> | undefined): ReadonlyMap<string, ResolvedKind> {
  const resolved = new Map<string, ResolvedKind>();
  for (const [kind, options] of Object.entries(kinds ?? {})) {
    const field = `kinds.${kind}`;
    checkKeys(options, field, ["maxAttempts", "retry", "leaseMs", "priority"]);
    resolved.set(kind, {
      maxAttempts: options.maxAttempts === undefined ? defaultMaxAttempts : checkMaxAttempts(options.maxAttempts, `${field}.maxAttempts`),
      retry: resolveRetryPolicy(options.retry, `${field}.retry`),
      leaseMs: options.leaseMs === undefined ? undefined : positiveMs(options.leaseMs, `${field}.leaseMs`),
      priority: options.priority === undefined ? 0 : integer(options.priority, `${field}.priority`),
    });
  }
  return resolved;
}

/** Rejects unknown option names, suggesting the nearest known one. */
export function checkKeys(options: unknown, field: string, known: readonly string[]): void {
  if (options === undefined) return;
  if (typeof options !== "object" || options === null || Array.isArray(options)) throw new ValidationError(field, "must be an object");
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      const hint = closest(key, known);
      throw new ValidationError(`${field}.${key}`.replace(/^\./, ""), `unknown option${hint ? ` — did you mean '${hint}'?` : ""}`);
    }
  }
}

/** A positive, finite number of milliseconds. */
export function positiveMs(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) throw new ValidationError(field, `must be a positive number of milliseconds (got ${JSON.stringify(value)})`);
  return value;
}

/** A non-negative, finite number of milliseconds. */
export function nonNegativeMs(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) throw new ValidationError(field, `must be a number of milliseconds ≥ 0 (got ${JSON.stringify(value)})`);
  return value;
}

/** A safe integer. */
export function integer(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || Math.abs(value) > 2_147_483_647) throw new ValidationError(field, `must be an integer (got ${JSON.stringify(value)})`);
  return value;
}
