import type { Clock } from "../clock.js";
import type { Driver } from "../driver/types.js";
import { type Queries, byIdJson } from "../sql/jobs.js";
import type { ClaimedJob } from "./executor.js";
import { maxRowsPerWrite } from "./completer.js";

/**
 * Writes the progress handlers report with `ctx.progress()`, in the background: only each
 * job's latest value is kept, and all of them are written by one statement at most once
 * per `intervalMs`, so a handler that reports in a tight loop costs one write per job per
 * interval, not one per call. A job that finishes takes its unwritten value with it
 * ({@link take}): the completion writes it, also when a write of that value is in flight,
 * which a completion that commits first would leave with nothing to update. A write that
 * fails is reported and its values are tried again with the next one, unless newer ones
 * came in or their job finished.
 */
export class ProgressWriter {
  readonly #driver: Driver;
  readonly #queries: Queries;
  readonly #workerId: string;
  readonly #intervalMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #clock: Clock;
  /** Each running job's latest unwritten progress, as JSON text. */
  #pending = new Map<ClaimedJob, string>();
  /** The values of the write in flight, by job, until it ends or their job finishes. */
  #writingValues = new Map<ClaimedJob, string>();
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;
  #lastWrite = -Infinity;

  constructor(driver: Driver, queries: Queries, workerId: string, intervalMs: number, onError: (error: unknown) => void, clock: Clock) {
    this.#driver = driver;
    this.#queries = queries;
    this.#workerId = workerId;
    this.#intervalMs = intervalMs;
    this.#onError = onError;
    this.#clock = clock;
  }

  /** Records a running job's latest progress (checked JSON text); written within `intervalMs`. */
  report(job: ClaimedJob, json: string): void {
    this.#pending.set(job, json);
    this.#schedule();
  }

  /** Takes a job's unwritten progress, if any: the job finished, and its completion writes it (or nothing does). */
  take(job: ClaimedJob): string | undefined {
    const json = this.#pending.get(job) ?? this.#writingValues.get(job);
    this.#pending.delete(job);
    this.#writingValues.delete(job);
    return json;
  }

  /** Writes every pending value now. Rejects if the write failed (the values are kept). */
  async flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#writing) await this.#writing.catch(() => {});
    if (this.#pending.size === 0) return;
    // The pending values become the write's: take() finds a value there until the write ends.
    this.#writingValues = this.#pending;
    this.#pending = new Map();
    this.#lastWrite = this.#clock.now();
    this.#writing = this.#write([...this.#writingValues]);
    try {
      await this.#writing;
    } catch (error) {
      for (const [job, json] of this.#writingValues) if (!this.#pending.has(job)) this.#pending.set(job, json);
      throw error;
    } finally {
      this.#writingValues = new Map();
      this.#writing = undefined;
      if (this.#pending.size > 0) this.#schedule();
    }
  }

  /** Stops the timer and forgets what is unwritten: the worker stopped, its jobs are no longer running here. */
  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pending.clear();
    this.#writingValues.clear();
  }

  #schedule(): void {
    if (this.#timer || this.#writing) return;
    const delay = Math.max(0, this.#lastWrite + this.#intervalMs - this.#clock.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flush().catch((error: unknown) => this.#onError(error));
    }, delay);
  }

  async #write(entries: readonly (readonly [ClaimedJob, string])[]): Promise<void> {
    for (let i = 0; i < entries.length; i += maxRowsPerWrite) {
      const chunk = entries.slice(i, i + maxRowsPerWrite);
      const ids = chunk.map(([job]) => job.id);
      const values = byIdJson(ids, chunk.map(([job, json]) => ({ a: job.attempt, p: json })));
      await this.#driver.run(this.#queries.progress, [ids, values, this.#workerId]);
    }
  }
}
