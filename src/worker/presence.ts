import type { Clock } from "../clock.js";
import type { Driver, QueryResult, Statement } from "../driver/types.js";
import { reservedTrustMs, workerQueriesFor } from "../sql/workers.js";

/** How often a running worker refreshes its row in the registry (well within its staleness). */
const refreshMs = 15_000;

/**
 * A worker's row in the registry of live workers (`<schema>.workers`): what it serves, so
 * `stats().unserved` can name ready jobs no live worker would claim. Written at start,
 * refreshed every 15 s from the worker's existing 1 s timer, deleted at stop: no per-job cost.
 * It also says whether the worker waits for the insert trigger's notices (see waiting.ts):
 * written at start as waiting, and again as the worker goes busy or comes back to rest. A
 * row not refreshed for a minute no longer counts for that (a killed worker's, see migration 027).
 * Once the worker leaves, no write of it lands after the delete: a refresh or a change of
 * "waiting" still in flight then (from a timer that fired as the worker stopped) would
 * otherwise put the row back, counted as a live worker for that minute.
 *
 * The row is also what lets the rescuer return this worker's reserved jobs (claimed ahead,
 * never started) before their lease ends, should the worker die: once the row is 60 s old,
 * the rescuer returns them and moves the row's birth (started_at) to its now (migration 031).
 * So the worker starts a reserved job only while {@link trusts} says so: within
 * {@link reservedTrustMs} (50 s) of sending a write that found the row born when it was
 * before. A write that finds the row born again (or deleted and written again) calls
 * {@link onRecreated}: the worker gives back what it had reserved.
 */
export class WorkerPresence {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #id: string;
  readonly #queues: readonly string[];
  readonly #kinds: readonly string[];
  readonly #clock: Clock;
  #lastAt = -Infinity;
  /** Writes in flight, settled or not: {@link WorkerPresence.leave} waits for them. */
  readonly #writes = new Set<Promise<void>>();
  #left = false;
  /** The row's birth (epoch µs) as this worker's writes last found it; undefined before the first. */
  #born: bigint | undefined;
  /** When the latest write that found the row {@link #born} was sent (clock). */
  #confirmedAt = -Infinity;
  /** Called when a write finds the row born again: its reserved jobs may have been returned. */
  onRecreated: () => void = () => {};
  #rebirths = 0;

  constructor(driver: Driver, schema: string, id: string, queues: readonly string[], kinds: readonly string[], clock: Clock) {
    this.#driver = driver;
    this.#schema = schema;
    this.#id = id;
    this.#queues = queues;
    this.#kinds = kinds;
    this.#clock = clock;
  }

  /**
   * Writes the row when it is due a refresh (at once the first time). Resolves true when
   * the row says the worker waits but had stopped counting for the insert trigger (missing,
   * or not refreshed for about a minute: the process stalled, or the database was out of
   * reach): inserts may have gone unannounced meanwhile. Rejects when the write fails.
   */
  async refresh(): Promise<boolean> {
    if (this.#left || this.#clock.now() - this.#lastAt < refreshMs) return false;
    const sentAt = (this.#lastAt = this.#clock.now());
    const { rows } = await this.#write<{ revived: boolean; born: string }>(workerQueriesFor(this.#schema).present, [this.#id, this.#queues, this.#kinds]);
    this.#found(rows[0]?.born, sentAt);
    return rows[0]?.revived === true;
  }

  /** Says in the row whether the worker waits for notices (inserting it if it is missing). Rejects when the write fails. */
  async wait(waiting: boolean): Promise<void> {
    if (this.#left) return;
    const sentAt = this.#clock.now();
    const { rows } = await this.#write<{ born: string }>(workerQueriesFor(this.#schema).waiting, [this.#id, this.#queues, this.#kinds, waiting]);
    this.#found(rows[0]?.born, sentAt);
  }

  /**
   * Whether the worker may start a reserved job at `at` (clock): a write sent less than
   * {@link reservedTrustMs} before found its row as it left it, so the row cannot have been
   * 60 s old (workerStaleSeconds), and the rescuer cannot have returned the job.
   */
  trusts(at: number): boolean {
    return at - this.#confirmedAt < reservedTrustMs;
  }

  /** How many times a write found the row born again: a claim sent before one of them gives back what it reserved. */
  get rebirths(): number {
    return this.#rebirths;
  }

  /** A write sent at `sentAt` found the row born at `born`. */
  #found(born: string | undefined, sentAt: number): void {
    if (born === undefined || this.#left) return;
    const at = BigInt(born);
    if (this.#born !== undefined && at < this.#born) return; // its reply came after that of a write that found the row born again
    const again = this.#born !== undefined && at > this.#born;
    this.#born = at;
    this.#confirmedAt = again ? sentAt : Math.max(this.#confirmedAt, sentAt);
    if (!again) return;
    this.#rebirths++;
    this.onRecreated();
  }

  /** Deletes the row (the worker stopped), once the writes in flight have ended; nothing is written after. Rejects when the delete fails. */
  async leave(): Promise<void> {
    this.#left = true;
    await Promise.all(this.#writes);
    await this.#driver.run(workerQueriesFor(this.#schema).leave, [this.#id]);
  }

  #write<Row>(statement: Statement, params: readonly unknown[]): Promise<QueryResult<Row>> {
    const write = this.#driver.run<Row>(statement, params);
    const settled = write.then(
      () => {},
      () => {},
    );
    this.#writes.add(settled);
    void settled.then(() => this.#writes.delete(settled));
    return write;
  }
}
