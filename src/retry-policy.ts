import { ValidationError } from "./errors.js";

/**
 * How long to wait after failure number `n`:
 * `min(maxDelayMs, baseDelayMs × factor^(n−1)) × (1 − jitter + jitter × random)`.
 *
 * The defaults: 30 s doubling, capped at 1 hour, times a 0.5–1.0 jitter,
 * and 8 attempts — enough to ride out a 20-minute outage even if jitter rolls its
 * minimum every time.
 */
export interface RetryPolicy {
  /** Wait after the first failure, in milliseconds. Default 30 000. */
  readonly baseDelayMs: number;
  /** Cap on any single wait, in milliseconds. Default 3 600 000 (1 hour). */
  readonly maxDelayMs: number;
  /** Growth per failure. Default 2. */
  readonly factor: number;
  /** Fraction of the wait that is randomised, 0–1. Default 0.5 (×0.5–1.0). */
  readonly jitter: number;
}


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

/**
 * Milliseconds to wait after failure number `failure` (1-based).
 *
 * @example
 * ```ts
 * retryDelay(3, defaultRetryPolicy, () => 1); // 120_000: 30 s × 2², no jitter discount
 * ```
 */
export function retryDelay(
  failure: number,
  policy: RetryPolicy = defaultRetryPolicy,
  random: () => number = Math.random,
): number {
  const raw = Math.min(policy.maxDelayMs, policy.baseDelayMs * policy.factor ** Math.max(0, failure - 1));
  return raw * (1 - policy.jitter + policy.jitter * random());
}

/** Fills in defaults and checks every field; `field` prefixes error messages. */
export function resolveRetryPolicy(partial: Partial<RetryPolicy> | undefined, field: string, base: RetryPolicy = defaultRetryPolicy): RetryPolicy {
  if (partial === undefined) return base;
  if (typeof partial !== "object" || partial === null) throw new ValidationError(field, "must be an object");
  const known = new Set(Object.keys(defaultRetryPolicy));
  for (const key of Object.keys(partial)) {
    if (!known.has(key)) throw new ValidationError(`${field}.${key}`, `unknown option (expected one of ${[...known].join(", ")})`);
  }
  const policy = { ...base, ...partial };
  nonNegative(policy.baseDelayMs, `${field}.baseDelayMs`);
  nonNegative(policy.maxDelayMs, `${field}.maxDelayMs`);
  if (!Number.isFinite(policy.factor) || policy.factor < 1) throw new ValidationError(`${field}.factor`, "must be a number ≥ 1");
  if (!Number.isFinite(policy.jitter) || policy.jitter < 0 || policy.jitter > 1) throw new ValidationError(`${field}.jitter`, "must be between 0 and 1");
  return Object.freeze(policy);
}

function nonNegative(value: unknown, field: string): void {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) throw new ValidationError(field, "must be a finite number ≥ 0");
}

/**
 * A job's own `retry` column (jsonb read as text; null when it has none) as a whole
 * policy: the fields it leaves out come from `base`, the kind's policy (a partial policy
 * written by plain SQL is legal). Throws a {@link ValidationError} naming the column for
 * anything that is not a policy, such as a JSON string or a negative delay.
 */
export function decodeRetryPolicy(text: string | null, base: RetryPolicy): RetryPolicy | null {
  if (text === null) return null;
  const value: unknown = JSON.parse(text);
  if (value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) throw new ValidationError("retry", `must be a JSON object (got ${text.length > 100 ? `${text.slice(0, 100)}…` : text})`);
  return resolveRetryPolicy(value, "retry", base);
}
