import { ValidationError } from "./errors.js";

const tag: unique symbol = Symbol.for("errand.outcome");

/** A handler's request to run the job again later without spending an attempt. */
export interface Snooze {
  readonly [tag]: "snooze";
  readonly delayMs: number;
}

/**
 * Return this from a handler to put the job back for `delayMs` without counting the
 * attempt (e.g. a rate limit said "come back in a minute").
 *
 * @example
 * ```ts
 * if (rateLimited) return snooze(60_000);
 * ```
 */
export function snooze(delayMs: number): Snooze {
  if (!Number.isFinite(delayMs) || delayMs < 0) throw new ValidationError("delayMs", `snooze needs a number of milliseconds ≥ 0 (got ${String(delayMs)})`);
  return { [tag]: "snooze", delayMs };
}

/** True when a handler's return value is a {@link Snooze}. */
export function isSnooze(value: unknown): value is Snooze {
  return typeof value === "object" && value !== null && (value as { [tag]?: unknown })[tag] === "snooze";
}
