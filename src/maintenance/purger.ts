import { setTimeout as sleep } from "node:timers/promises";
import { type Clock, monotonicClock } from "../clock.js";
import type { Driver } from "../driver/types.js";
import { defaultPurgeBatchSize, defaultPurgeDutyCycle, defaultPurgeIntervalMs, defaultRetentionMs } from "../defaults.js";
import { checkKeys, integerIn, nonNegativeMs, share } from "../validate.js";
import { observeQueriesFor } from "../sql/observe.js";
import { Repeater, type Service } from "./service.js";

/** Stats buckets are kept this long (the longest stats window is an hour). */
const outcomeCountsRetentionMs = 2 * 3_600_000;

/** What to delete. */
export interface PurgeOptions {
  /** Delete done and cancelled jobs finished longer ago than this. Default 7 days. */
  readonly olderThanMs?: number;
  /** Also delete dead jobs that died longer ago than this. Default: keep dead jobs until a person acts. */
  readonly deadOlderThanMs?: number;
  /** Rows per DELETE: each batch is its own short transaction. Default 1000. */
  readonly batchSize?: number;
  /**
   * The share of its time the purge spends deleting, more than 0 and at most 1: after each
   * full batch it rests `(1 - dutyCycle) / dutyCycle` times as long as the batch took, so
   * that beside busy workers it takes about that share of one connection and one core.
   * Default 0.12; 1 deletes without rests (a one-off cleanup of a backlog, with no workers).
   */
  readonly dutyCycle?: number;
  /** Only count what would be deleted. */
  readonly dryRun?: boolean;
}

/** What a purge did (or, on a dry run, would do). */
export interface PurgeResult {
  readonly done: number;
  /** Cancelled jobs deleted (by the same age as done ones). */
  readonly cancelled: number;
  readonly dead: number;
  /**
   * Records of job batches (`errand.batch`) deleted: finished longer ago than `olderThanMs`,
   * with none of their jobs left.
   */
  readonly finishedBatches: number;
  /** DELETE statements run. */
  readonly batches: number;
  readonly dryRun: boolean;
}

/**
 * Deletes done and cancelled jobs past the retention, oldest first, in batches of `batchSize` rows,
 * each committed on its own, so no lock or transaction outlives one small batch, with a rest
 * after each (see `dutyCycle`), so that a purge beside busy workers takes little of their speed. Dead
 * jobs are kept unless `deadOlderThanMs` is given. Then the records of job batches finished
 * past the retention whose jobs are all gone. Safe to run from several processes.
 *
 * @example
 * ```ts
 * await errand.purge({ olderThanMs: 7 * 86_400_000 }); // { done: 1234, cancelled: 5, dead: 0, finishedBatches: 2, batches: 4, dryRun: false }
 * ```
 */
export async function purgeJobs(driver: Driver, schema: string, options: PurgeOptions = {}, pace: PurgePace = {}): Promise<PurgeResult> {
  checkKeys(options, "", purgeKeys);
  const olderThanMs = nonNegativeMs(options.olderThanMs ?? defaultRetentionMs, "olderThanMs");
  const deadOlderThanMs = options.deadOlderThanMs === undefined ? null : nonNegativeMs(options.deadOlderThanMs, "deadOlderThanMs");
  const batchSize = integerIn(options.batchSize ?? defaultPurgeBatchSize, "batchSize", 1, 100_000);
  const dutyCycle = share(options.dutyCycle ?? defaultPurgeDutyCycle, "dutyCycle");
  const { clock = monotonicClock, rest = restFor, signal } = pace;
  const q = observeQueriesFor(schema);
  if (options.dryRun) {
    const { rows } = await driver.run<{ done: string; cancelled: string; dead: string; finished_batches: string }>(q.countPrunable, [olderThanMs, deadOlderThanMs]);
    const row = rows[0]!;
    return { done: Number(row.done), cancelled: Number(row.cancelled), dead: Number(row.dead), finishedBatches: Number(row.finished_batches), batches: 0, dryRun: true };
  }
  let batches = 0;
  const drain = async (statement: typeof q.pruneDone, age: number) => {
    let deleted = 0;
    while (!signal?.aborted) {
      const started = clock.now();
      const { rows } = await driver.run<{ id: string }>(statement, [age, batchSize]);
      batches++;
      deleted += rows.length;
      if (rows.length < batchSize) break;
      if (dutyCycle < 1) await rest(((clock.now() - started) * (1 - dutyCycle)) / dutyCycle, signal);
    }
    return deleted;
  };
  const done = (await drain(q.pruneMoved, olderThanMs)) + (await drain(q.pruneDone, olderThanMs));
  const cancelled = await drain(q.pruneCancelled, olderThanMs);
  const dead = deadOlderThanMs === null ? 0 : await drain(q.pruneDead, deadOlderThanMs);
  // After the jobs: a batch goes once its last job has.
  const finishedBatches = await drain(q.pruneBatches, olderThanMs);
  if (!signal?.aborted) await driver.run(q.pruneOutcomeCounts, [outcomeCountsRetentionMs]);
  return { done, cancelled, dead, finishedBatches, batches, dryRun: false };
}

const purgeKeys = ["olderThanMs", "deadOlderThanMs", "batchSize", "dutyCycle", "dryRun"];

/** How a purge times its batches and rests between them; `signal` ends it between two batches. Tests pass their own clock and rest. */
export interface PurgePace {
  readonly clock?: Clock;
  readonly rest?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  readonly signal?: AbortSignal | undefined;
}

/** Waits `ms`, or less if `signal` aborts first. */
const restFor = (ms: number, signal: AbortSignal | undefined): Promise<void> => sleep(ms, undefined, { signal }).catch(() => {});

/** Options of a {@link Purger}: what to delete, and how often. */
export interface PurgerOptions extends Omit<PurgeOptions, "dryRun"> {
  /** Time between runs. Default 1 hour. */
  readonly intervalMs?: number;
  /** Receives each run's result. */
  readonly onPurge?: (result: PurgeResult) => void;
  /** Receives errors (the purger keeps running). */
  readonly onError?: (error: unknown) => void;
}

/**
 * Runs {@link purgeJobs} every `intervalMs` (1 hour by default), the first time at
 * start. A {@link Service}: `start()`, `stop()`, `runOnce()`. Safe in every worker
 * process: concurrent batches skip each other's rows. Create one with `errand.purger()`,
 * which `errand.close()` stops.
 *
 * @example
 * ```ts
 * const purger = errand.purger({ olderThanMs: 3 * 86_400_000 });
 * await purger.start();
 * ```
 */
export class Purger implements Service<PurgeResult> {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #options: PurgeOptions;
  readonly #pace: Omit<PurgePace, "signal">;
  readonly #repeater: Repeater;
  /** The purges under way: stop() ends each between two batches. */
  readonly #runs = new Set<AbortController>();

  /** `pace`: the clock and rest between batches (tests pass their own). */
  constructor(driver: Driver, schema: string, options: PurgerOptions = {}, pace: Omit<PurgePace, "signal"> = {}) {
    const { intervalMs, onPurge, onError, ...purge } = options;
    checkKeys(purge, "", purgeKeys.filter((key) => key !== "dryRun"));
    this.#driver = driver;
    this.#schema = schema;
    this.#options = purge;
    this.#pace = pace;
    const report = onPurge ?? (() => {});
    const fail = onError ?? (() => {});
    this.#repeater = new Repeater(() => this.runOnce().then(report, fail), nonNegativeMs(intervalMs ?? defaultPurgeIntervalMs, "intervalMs"));
  }

  /** Purges once now; a {@link stop} meanwhile ends it after the batch under way, with what it deleted so far. */
  async runOnce(): Promise<PurgeResult> {
    const run = new AbortController();
    this.#runs.add(run);
    try {
      return await purgeJobs(this.#driver, this.#schema, this.#options, { ...this.#pace, signal: run.signal });
    } finally {
      this.#runs.delete(run);
    }
  }

  /** Purges now and then every `intervalMs`; resolves after the first purge. */
  start(): Promise<void> {
    return this.#repeater.start();
  }

  /** Stops the timer and ends a purge in progress after its batch under way (its rest is cut short). */
  stop(): Promise<void> {
    for (const run of this.#runs) run.abort();
    return this.#repeater.stop();
  }
}

/** @deprecated {@link Purger} under its former name, which took `onPrune` for `onPurge`. */
export class Pruner extends Purger {
  constructor(driver: Driver, schema: string, options: PrunerOptions = {}) {
    const { onPrune, ...rest } = options;
    super(driver, schema, onPrune === undefined ? rest : { ...rest, onPurge: onPrune });
  }
}

/** @deprecated The options of the deprecated {@link Pruner}. */
export interface PrunerOptions extends Omit<PurgerOptions, "onPurge"> {
  readonly onPrune?: (result: PurgeResult) => void;
}

/** @deprecated {@link PurgeOptions} under its former name. */
export type PruneOptions = PurgeOptions;

/** @deprecated {@link PurgeResult} under its former name. */
export type PruneResult = PurgeResult;
