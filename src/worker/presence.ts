import type { Clock } from "../clock.js";
import type { Driver, QueryResult, Statement } from "../driver/types.js";
import { workerQueriesFor } from "../sql/workers.js";

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
    this.#lastAt = this.#clock.now();
    const { rows } = await this.#write<{ revived: boolean }>(workerQueriesFor(this.#schema).present, [this.#id, this.#queues, this.#kinds]);
    return rows[0]?.revived === true;
  }

  /** Says in the row whether the worker waits for notices (inserting it if it is missing). Rejects when the write fails. */
  async wait(waiting: boolean): Promise<void> {
    if (this.#left) return;
    await this.#write(workerQueriesFor(this.#schema).waiting, [this.#id, this.#queues, this.#kinds, waiting]);
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
