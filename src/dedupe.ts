/**
 * Dedupe modes: how long a job holds its `dedupeKey` against a second enqueue of the same
 * key. Validated here and sent with the job (`dedupe_mode`, `dedupe_ttl_ms`); the enqueue
 * statement in src/sql/jobs.ts applies them (see holdsKey there and migration 012).
 */
import { ValidationError } from "./errors.js";
import { checkKeys, closest } from "./validate.js";

/**
 * How long a job holds its dedupe key: while it holds it, an enqueue with the same key
 * inserts nothing and returns the holder's id with `duplicate: true`.
 *
 * - `"retained"` (the default): as long as the job's row exists, i.e. until the pruner
 *   deletes it (done jobs after 7 days by default) — an idempotency key.
 * - `"active"`: while the job waits or runs (ready, including a retry's wait, or running);
 *   once it is done, dead or cancelled, the key is free.
 * - `"queued"`: while the job waits to start; once a worker has claimed it, the same key
 *   enqueues a new job (which may then run alongside it).
 * - `"replace"`: as `"queued"`, and an enqueue with the key while the job still waits
 *   replaces it (debounce): its kind, payload, run time and options become the new
 *   enqueue's, keeping its id; `replaced: true` in the result. If the job is already
 *   running, a new job is enqueued.
 * - `{ ttlMs }`: for `ttlMs` milliseconds from the enqueue, whatever the job's state
 *   (throttle: at most one job per key per period).
 */
export type DedupeMode = "retained" | "active" | "queued" | "replace" | { readonly ttlMs: number };

/** The mode a `dedupeKey` has when `dedupe` is not given. */
export const defaultDedupeMode = "retained" satisfies DedupeMode;

const modes: readonly string[] = ["retained", "active", "queued", "replace"];

/** Longest ttl: 100 years, as for delays. */
const longestTtlMs = 100 * 365.25 * 86_400_000;

/**
 * The JSON fields (`,"dedupe_mode":…`) that carry `dedupe` for the enqueue statement, or
 * "" for the default. Throws a {@link ValidationError} naming `field` (e.g. `dedupe`,
 * `jobs[3].dedupe`, `dedupe.ttlMs`); `dedupe` without a key is refused rather than ignored.
 */
export function encodeDedupe(dedupe: unknown, field: string, hasKey: boolean): string {
  if (dedupe === undefined) return "";
  if (!hasKey) throw new ValidationError(field, "needs a dedupeKey: the mode says how long the key holds");
  if (typeof dedupe === "string") {
    if (!modes.includes(dedupe)) {
      const hint = closest(dedupe, [...modes, "ttlMs"]);
      throw new ValidationError(field, `must be "retained", "active", "queued", "replace" or { ttlMs } (got "${dedupe}")${hint ? ` — did you mean '${hint}'?` : ""}`);
    }
    return dedupe === "retained" ? "" : `,"dedupe_mode":"${dedupe}"`;
  }
  if (typeof dedupe !== "object" || dedupe === null || Array.isArray(dedupe)) {
    throw new ValidationError(field, `must be "retained", "active", "queued", "replace" or { ttlMs } (got ${typeof dedupe === "number" || typeof dedupe === "boolean" ? String(dedupe) : Array.isArray(dedupe) ? "an array" : typeof dedupe})`);
  }
  checkKeys(dedupe, field, ["ttlMs"]);
  const ttl = (dedupe as { ttlMs?: unknown }).ttlMs;
  if (typeof ttl !== "number" || !Number.isFinite(ttl) || ttl <= 0 || ttl > longestTtlMs) {
    const got = typeof ttl === "string" ? `"${ttl}"` : String(ttl);
    throw new ValidationError(`${field}.ttlMs`, `must be a number of milliseconds > 0 and at most ${longestTtlMs} (100 years) (got ${got})`);
  }
  return `,"dedupe_mode":"ttl","dedupe_ttl_ms":${ttl}`;
}
