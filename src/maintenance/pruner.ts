import type { Driver } from "../driver/types.js";
import { defaultPruneBatchSize, defaultPruneIntervalMs, defaultRetentionMs } from "../defaults.js";
import { checkKeys, integerIn, nonNegativeMs } from "../validate.js";
import { observeQueriesFor } from "../sql/observe.js";

/** Stats buckets are kept this long (the longest stats window is an hour). */
const outcomeCountsRetentionMs = 2 * 3_600_000;

/** What to delete. */
export interface PruneOptions {
  /** Delete done jobs finished longer ago than this. Default 7 days. */
  readonly olderThanMs?: number;
  /** Also delete dead jobs that died longer ago than this. Default: keep dead jobs until a person acts. */
  readonly deadOlderThanMs?: number;
  /** Rows per DELETE: each batch is its own short transaction. Default 1000. */
  readonly batchSize?: number;
  /** Only count what would be deleted. */
  readonly dryRun?: boolean;
}

/** What a prune did (or, on a dry run, would do). */
export interface PruneResult {
  readonly done: number;
  readonly dead: number;
  /** DELETE statements run. */
  readonly batches: number;
  readonly dryRun: boolean;
}

/**
 * Deletes done jobs past the retention, oldest first, in batches of `batchSize` rows,
 * each committed on its own, so no lock or transaction outlives one small batch. Dead
 * jobs are kept unless `deadOlderThanMs` is given. Safe to run from several processes.
 *
 * @example
 * ```ts
 * await errand.purge({ olderThanMs: 7 * 86_400_000 }); // { done: 1234, dead: 0, batches: 2, dryRun: false }
 * ```
 */
export async function prune(driver: Driver, schema: string, options: PruneOptions = {}): Promise<PruneResult> {
  checkKeys(options, "", ["olderThanMs", "deadOlderThanMs", "batchSize", "dryRun"]);
  const olderThanMs = nonNegativeMs(options.olderThanMs ?? defaultRetentionMs, "olderThanMs");
  const deadOlderThanMs = options.deadOlderThanMs === undefined ? null : nonNegativeMs(options.deadOlderThanMs, "deadOlderThanMs");
  const batchSize = integerIn(options.batchSize ?? defaultPruneBatchSize, "batchSize", 1, 100_000);
  const q = observeQueriesFor(schema);
  if (options.dryRun) {
    const { rows } = await driver.run<{ done: string; dead: string }>(q.countPrunable, [olderThanMs, deadOlderThanMs]);
    return { done: Number(rows[0]!.done), dead: Number(rows[0]!.dead), batches: 0, dryRun: true };
  }
  let batches = 0;
  const drain = async (statement: typeof q.pruneDone, age: number) => {
    let deleted = 0;
    for (;;) {
      const { rows } = await driver.run<{ id: string }>(statement, [age, batchSize]);
      batches++;
      deleted += rows.length;
      if (rows.length < batchSize) return deleted;
    }
  };
  const done = await drain(q.pruneDone, olderThanMs);
  const dead = deadOlderThanMs === null ? 0 : await drain(q.pruneDead, deadOlderThanMs);
  await driver.run(q.pruneOutcomeCounts, [outcomeCountsRetentionMs]);
  return { done, dead, batches, dryRun: false };
}

/** A pruner running on a timer. */
export interface PrunerOptions extends Omit<PruneOptions, "dryRun"> {
  /** Time between runs. Default 1 hour. */
  readonly intervalMs?: number;
  /** Receives each run's result. */
  readonly onPrune?: (result: PruneResult) => void;
  /** Receives errors (the pruner keeps running). */
  readonly onError?: (error: unknown) => void;
}

/**
 * Runs {@link prune} every `intervalMs` (first run at start). Same lifecycle as the
 * other services: `start()`, `stop()`, `runOnce()`.
 */
export class Pruner {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #options: PruneOptions;
  readonly #intervalMs: number;
  readonly #onPrune: (result: PruneResult) => void;
  readonly #onError: (error: unknown) => void;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(driver: Driver, schema: string, options: PrunerOptions = {}) {
    const { intervalMs, onPrune, onError, ...prune } = options;
    checkKeys(prune, "", ["olderThanMs", "deadOlderThanMs", "batchSize"]);
    this.#driver = driver;
    this.#schema = schema;
    this.#options = prune;
    this.#intervalMs = nonNegativeMs(intervalMs ?? defaultPruneIntervalMs, "intervalMs");
    this.#onPrune = onPrune ?? (() => {});
    this.#onError = onError ?? (() => {});
  }

  /** Prunes once now. */
  runOnce(): Promise<PruneResult> {
    return prune(this.#driver, this.#schema, this.#options);
  }

  /** Prunes now and then every `intervalMs`. */
  start(): void {
    if (this.#timer) return;
    const tick = () => {
      this.#running = this.runOnce().then(this.#onPrune, this.#onError);
    };
    tick();
    this.#timer = setInterval(tick, this.#intervalMs);
    this.#timer.unref();
  }

  /** Stops the timer and waits for a run in progress. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
