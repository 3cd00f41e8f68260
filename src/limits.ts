/**
 * Limits by concurrency key: how many of a key's jobs may run at once, and how many may
 * start per period, enforced across every worker by the keyed claim (`claim_keyed`,
 * migration 016) from numbers stored in `<schema>.limits`, so every worker sees the same.
 */
import type { Driver } from "./driver/types.js";
import { ValidationError } from "./errors.js";
import { limitQueriesFor } from "./sql/limits.js";
import { checkKeys, checkQueueName, checkText, integerIn } from "./validate.js";

/** Longest concurrency key, in bytes of UTF-8 (it is indexed). */
const maxKeyBytes = 1000;

/** A concurrency key (or a limit's key): a non-empty string of at most 1,000 bytes. */
export function checkConcurrencyKey(value: unknown, field: string): string {
  return checkText(value, field, { maxBytes: maxKeyBytes });
}

/** A rate: `count` starts per `periodMs`. */
export interface Rate {
  readonly count: number;
  readonly periodMs: number;
}

const units: Readonly<Record<string, number>> = { ms: 1, s: 1000, sec: 1000, second: 1000, m: 60_000, min: 60_000, minute: 60_000, h: 3_600_000, hour: 3_600_000, d: 86_400_000, day: 86_400_000 };
const maxInt = 2_147_483_647;

/**
 * Reads a rate: `"10/s"`, `"600/min"`, `"600 per minute"`, `"1000/hour"`, `"5/10s"` (5 per
 * 10 seconds), or `{ count, periodMs }`. Units: ms, s/sec/second, m/min/minute, h/hour, d/day
 * (plurals too). Throws a {@link ValidationError} naming `field` otherwise.
 */
export function parseRate(value: unknown, field: string): Rate {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    checkKeys(value, field, ["count", "periodMs"]);
    const { count, periodMs } = value as { count?: unknown; periodMs?: unknown };
    return { count: integerIn(count, `${field}.count`, 1, maxInt), periodMs: integerIn(periodMs, `${field}.periodMs`, 1, maxInt) };
  }
  const match = typeof value === "string" ? /^\s*(\d+)\s*(?:\/|per)\s*(\d*)\s*([a-z]+?)s?\s*$/i.exec(value) : null;
  const unit = match ? units[match[3]!.toLowerCase()] : undefined;
  if (!match || unit === undefined) {
    throw new ValidationError(field, `must be a rate like "10/s", "600/min" or "600 per minute" (units ms, s, min, h, day), or { count, periodMs } (got ${JSON.stringify(value)})`);
  }
  const count = Number(match[1]);
  const periodMs = (match[2] === "" ? 1 : Number(match[2])) * unit;
  if (count < 1 || count > maxInt) throw new ValidationError(field, `must allow at least 1 start per period (got ${JSON.stringify(value)})`);
  if (periodMs < 1 || periodMs > maxInt) throw new ValidationError(field, `must have a period from 1 ms to 24 days (got ${JSON.stringify(value)})`);
  return { count, periodMs };
}

/** What {@link Limits.set} takes: at least one of the two. */
export interface LimitOptions {
  /** At most this many of the key's jobs running at once, across every worker (≥ 1). */
  readonly concurrency?: number;
  /** At most this many starts in any window of the period, across every worker: `"10/s"`, `"600/min"`. */
  readonly rate?: string | Rate;
}

/** A stored limit, with what its keys hold now. */
export interface LimitInfo {
  /** An exact key, or a prefix ending in `*` whose numbers apply to each matching key on its own. */
  readonly key: string;
  readonly concurrency: number | null;
  readonly rate: Rate | null;
  /** Jobs of the matching keys running now. */
  readonly running: number;
  /** Jobs of the matching keys ready (due or not), waiting for their turn. */
  readonly ready: number;
  /** Of those, the due ones held back by their key's rate now (its window is full). */
  readonly rateHeld: number;
}

/** A queue's global concurrency limit, with its running jobs now. */
export interface QueueLimitInfo {
  readonly queue: string;
  /** At most this many of the queue's jobs running at once, across every worker. */
  readonly concurrency: number;
  /** The queue's jobs running now (every worker's). */
  readonly running: number;
}

interface LimitRow {
  key: string;
  concurrency: number | null;
  rate_count: number | null;
  rate_period_ms: number | null;
  running: string | number;
  ready: string | number;
  rate_held: string | number;
}

/**
 * Concurrency and rate limits by key, shared by every worker through the database.
 *
 * @example
 * ```ts
 * await errand.limits.set("tenant:*", { concurrency: 2 });        // each tenant: 2 at a time
 * await errand.limits.set("provider:mailgun", { rate: "10/s" }); // everyone together: 10 starts a second
 * await errand.enqueue("send_email", { to: "a@example.com" }, { concurrencyKey: "provider:mailgun" });
 * ```
 */
export class Limits {
  readonly #driver: Driver;
  readonly #schema: string;

  constructor(driver: Driver, schema: string) {
    this.#driver = driver;
    this.#schema = schema;
  }

  /**
   * Sets (or replaces) the limits of `key`: an exact key, or a prefix ending in `*`
   * (`"tenant:*"`: each tenant key gets these numbers on its own). The exact key's limit
   * wins over a prefix's, a longer prefix over a shorter. Takes effect at the next claim.
   */
  async set(key: string, options: LimitOptions): Promise<void> {
    checkConcurrencyKey(key, "key");
    checkKeys(options, "options", ["concurrency", "rate"]);
    if (options === undefined || (options.concurrency === undefined && options.rate === undefined)) {
      throw new ValidationError("options", "give concurrency, rate or both (to lift a key's limits, use limits.remove)");
    }
    const concurrency = options.concurrency === undefined ? null : integerIn(options.concurrency, "concurrency", 1, maxInt);
    const rate = options.rate === undefined ? null : parseRate(options.rate, "rate");
    await this.#driver.run(limitQueriesFor(this.#schema).set, [key, concurrency, rate?.count ?? null, rate?.periodMs ?? null]);
  }

  /** Removes the limits of `key` (as given to {@link set}); returns whether there were any. */
  async remove(key: string): Promise<boolean> {
    checkConcurrencyKey(key, "key");
    const { rows } = await this.#driver.run(limitQueriesFor(this.#schema).remove, [key]);
    return rows.length > 0;
  }

  /**
   * Sets (or replaces) the global concurrency limit of `queue`: at most `concurrency` of its
   * jobs running at once across every worker (each worker's own `queues: { name: n }` still
   * caps it locally). Workers learn it within a second (a notice, else their poll); from then
   * on they claim that queue's jobs only for free handler slots, one claim at a time per
   * queue. Queues without a limit are claimed as before, at no cost.
   */
  async setQueue(queue: string, options: { readonly concurrency: number }): Promise<void> {
    checkQueueName(queue, "queue");
    checkKeys(options, "options", ["concurrency"]);
    if (options === undefined || options.concurrency === undefined) throw new ValidationError("concurrency", "give the queue's limit, e.g. { concurrency: 10 } (to lift it, use limits.removeQueue)");
    const concurrency = integerIn(options.concurrency, "concurrency", 1, maxInt);
    await this.#driver.run(limitQueriesFor(this.#schema).setQueue, [queue, concurrency]);
  }

  /** Removes the concurrency limit of `queue`; returns whether it had one. */
  async removeQueue(queue: string): Promise<boolean> {
    checkQueueName(queue, "queue");
    const { rows } = await this.#driver.run(limitQueriesFor(this.#schema).removeQueue, [queue]);
    return rows.length > 0;
  }

  /** Every queue limit, by queue, with the queue's running jobs. */
  async listQueues(): Promise<QueueLimitInfo[]> {
    const { rows } = await this.#driver.run<{ queue: string; concurrency: number; running: string | number }>(limitQueriesFor(this.#schema).listQueues, []);
    return rows.map((row) => ({ queue: row.queue, concurrency: Number(row.concurrency), running: Number(row.running) }));
  }

  /** Every limit, by key, with the running, ready and rate-held jobs of the keys it covers. */
  list(): Promise<LimitInfo[]> {
    return readLimits(this.#driver, this.#schema);
  }
}

/** Every limit, by key, with what its keys hold now (`errand.limits.list()`, and `stats().limits`). */
export async function readLimits(driver: Driver, schema: string): Promise<LimitInfo[]> {
  const { rows } = await driver.run<LimitRow>(limitQueriesFor(schema).list, []);
  return rows.map((row) => ({
    key: row.key,
    concurrency: row.concurrency === null ? null : Number(row.concurrency),
    rate: row.rate_count === null || row.rate_period_ms === null ? null : { count: Number(row.rate_count), periodMs: Number(row.rate_period_ms) },
    running: Number(row.running),
    ready: Number(row.ready),
    rateHeld: Number(row.rate_held),
  }));
}
