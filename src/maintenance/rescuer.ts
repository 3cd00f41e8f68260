import type { Driver } from "../driver/types.js";
import { defaultRescueIntervalMs } from "../defaults.js";
import { checkKeys, positiveMs } from "../validate.js";
import { queriesFor } from "../sql/jobs.js";
import { limitQueriesFor } from "../sql/limits.js";
import { Repeater, type Service } from "./service.js";


/** Most expired leases one run returns; the rest wait for the next run. */
const rescueBatch = 1000;
/** Most lease records (migration 021: one per claim or heartbeat) one run reads. */
const recordBatch = 200;
/**
 * Every this many runs (and the first), a run also looks at every running job, not only at
 * the lease records due: a job claimed by a worker that keeps no records (the seed's claim
 * in plain SQL, errand before 021) is found that way, up to this many intervals after its
 * lease ran out (5 minutes by default). It reads every waiting and running job through the
 * open indexes. A worker's timed rescuer sweeps first at its second run, one interval after
 * start: at start the worker's claim floor takes its own first look from the start of the
 * same index, and where nobody has read that index (a long history never vacuumed) the two
 * would both fetch the row of every dead entry in it. The look goes out one poll interval
 * after start, so by the second run it has normally marked those entries dead, and the
 * sweep passes over them.
 */
export const sweepEvery = 10;

/** What one rescue did. */
export interface RescueResult {
  /** Jobs returned to `ready`. */
  readonly ready: number;
  /** Jobs buried as `dead`: their expired attempt was the last. */
  readonly dead: number;
}

/** Options of a {@link Rescuer}. */
export interface RescuerOptions {
  /** Time between runs. Default 30 s. */
  readonly intervalMs?: number;
  /** Receives each timed run's result, including empty ones. */
  readonly onRescue?: (result: RescueResult) => void;
  /** Receives errors (the rescuer keeps running). */
  readonly onError?: (error: unknown) => void;
}

/**
 * Returns jobs whose lease expired (their worker died or overran it) to `ready`, or buries
 * them as `dead` when the expired attempt was their last, up to 1,000 per run. It finds
 * them through the lease records that are due (up to 200 per run), and every
 * {@link sweepEvery}th run among all running jobs (see `rescue` in src/sql/jobs.ts). Every
 * worker runs one at start and every `rescueIntervalMs`; create one with
 * `errand.rescuer()` for a process that rescues for workers started with
 * `rescueIntervalMs: 0`. A {@link Service}: `start()`, `stop()`, `runOnce()`. Safe in any
 * number of processes at once (`FOR UPDATE SKIP LOCKED`).
 *
 * @example
 * ```ts
 * const rescuer = errand.rescuer({ intervalMs: 10_000 });
 * await rescuer.start();
 * ```
 */
export class Rescuer implements Service<RescueResult> {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #repeater: Repeater;
  #runs = 0;
  /** Whether the first timed run sweeps (see {@link sweepEvery}): false for a worker's. */
  readonly #sweepAtStart: boolean;

  constructor(driver: Driver, schema: string, options: RescuerOptions = {}, sweepAtStart = true) {
    checkKeys(options, "", ["intervalMs", "onRescue", "onError"]);
    this.#driver = driver;
    this.#schema = schema;
    this.#sweepAtStart = sweepAtStart;
    const report = options.onRescue ?? (() => {});
    const fail = options.onError ?? (() => {});
    this.#repeater = new Repeater(() => this.runOnce().then(report, fail), positiveMs(options.intervalMs ?? defaultRescueIntervalMs, "intervalMs"));
  }

  /** Rescues once now; rejects if the database cannot be reached. */
  async runOnce(): Promise<RescueResult> {
    const sweep = this.#runs++ % sweepEvery === 0;
    const { rows } = await this.#driver.run<{ id: string; status: string }>(queriesFor(this.#schema).rescue, [rescueBatch, recordBatch, sweep]);
    const dead = rows.filter((row) => row.status === "dead").length;
    // Workers at rest poll rarely: tell them (keyed jobs may be among the rescued), as an insert would.
    if (rows.length > dead) await this.#driver.run(limitQueriesFor(this.#schema).announceKeyed, []);
    return { ready: rows.length - dead, dead };
  }

  /** Rescues now and then every `intervalMs`; resolves after the first run. */
  start(): Promise<void> {
    if (!this.#sweepAtStart && this.#runs === 0) this.#runs = sweepEvery - 1; // the sweep comes with the next run
    return this.#repeater.start();
  }

  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void> {
    return this.#repeater.stop();
  }
}
