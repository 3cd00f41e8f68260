import type { Clock } from "../clock.js";

/** Most jobs an adaptive prefetch claims ahead. */
const maxAdaptivePrefetch = 4000;

/** The length of one throughput window: a quarter second. */
const windowMs = 250;

/**
 * How many jobs a worker claims beyond its free handler slots: a fixed number, or by
 * default about a quarter second of this worker's recent throughput — at least
 * `concurrency` while jobs are finishing, at most 4000. No-op-fast jobs are claimed four
 * thousand per statement (a dead worker's unstarted ones come back within 90 s: see
 * docs/crash-safety.md); a worker whose handlers have finished nothing in the last
 * quarter to half second (all busy with slow jobs, or just started) claims no more than it
 * can start, so it does not hoard jobs from other workers.
 */
export class Prefetch {
  /** The fixed prefetch, or undefined for adaptive. */
  readonly fixed: number | undefined;
  readonly #concurrency: number;
  readonly #clock: Clock;
  /** Handlers finished in the current and the previous window. */
  #finishedNow = 0;
  #finishedBefore = 0;
  #windowStart = 0;

  constructor(concurrency: number, fixed: number | undefined, clock: Clock) {
    this.#concurrency = concurrency;
    this.fixed = fixed;
    this.#clock = clock;
  }

  /** Jobs to claim ahead now. */
  size(): number {
    if (this.fixed !== undefined) return this.fixed;
    this.#roll();
    const recent = Math.max(this.#finishedNow, this.#finishedBefore);
    return Math.min(maxAdaptivePrefetch, recent === 0 ? 0 : Math.max(this.#concurrency, recent));
  }

  /** A handler finished (counted only when adaptive). */
  finished(): void {
    if (this.fixed !== undefined) return;
    this.#roll();
    this.#finishedNow++;
  }

  #roll(): void {
    const now = this.#clock.now();
    if (now - this.#windowStart < windowMs) return;
    this.#finishedBefore = now - this.#windowStart < 2 * windowMs ? this.#finishedNow : 0;
    this.#finishedNow = 0;
    this.#windowStart = now;
  }
}
