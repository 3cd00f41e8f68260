import type { Clock } from "../clock.js";
import { ValidationError } from "../errors.js";
import type { Driver } from "../driver/types.js";
import { Repeater, type Service } from "../maintenance/service.js";
import { positiveMs } from "../validate.js";
import { type ScheduleQueries, scheduleQueriesFor } from "../sql/schedules.js";
import { toDate } from "./info.js";
import { type EnqueueFn, type SchedulerEvent, handleDue } from "./due.js";

export type { EnqueueFn, SchedulerEvent } from "./due.js";

/** Options for a {@link Scheduler}. */
export interface SchedulerOptions {
  /** How often to look for due slots. Default 1000 ms. */
  readonly intervalMs?: number;
  /** Where "now" comes from. Default: the database's `now()`, so every scheduler agrees. */
  readonly clock?: Clock;
  /** Receives every enqueue, skip, missed range and error (for logs and tests). */
  readonly onEvent?: (event: SchedulerEvent) => void;
}

/** What one {@link Scheduler.runOnce} did. */
export interface SchedulerTick {
  /** The instant the tick planned for. */
  readonly now: Date;
  readonly events: readonly SchedulerEvent[];
}

const batch = 100;

/**
 * Turns due schedule slots into ordinary jobs. Run one in every worker process if you
 * like: each schedule's row is locked with `FOR UPDATE SKIP LOCKED` and advanced in the
 * same transaction as its jobs are inserted, so every slot is enqueued once. Create one
 * with `errand.schedules.scheduler()`. A {@link Service}: `start()`, `stop()`, `runOnce()`.
 *
 * @example
 * ```ts
 * const scheduler = errand.schedules.scheduler();
 * await scheduler.start();   // ticks every second
 * // …
 * await scheduler.stop();
 * ```
 */
export class Scheduler implements Service<SchedulerTick> {
  readonly #driver: Driver;
  readonly #queries: ScheduleQueries;
  readonly #enqueue: EnqueueFn;
  readonly #clock: Clock | undefined;
  readonly #onEvent: (event: SchedulerEvent) => void;
  readonly #repeater: Repeater;
  #stopped: (() => void)[] = [];

  /** Prefer `errand.schedules.scheduler()`. */
  constructor(driver: Driver, schema: string, enqueue: EnqueueFn, options: SchedulerOptions = {}) {
    for (const key of Object.keys(options)) {
      if (!["intervalMs", "clock", "onEvent"].includes(key)) throw new ValidationError(key, "unknown option (known: intervalMs, clock, onEvent)");
    }
    this.#driver = driver;
    this.#queries = scheduleQueriesFor(schema);
    this.#enqueue = enqueue;
    const intervalMs = options.intervalMs === undefined ? 1000 : positiveMs(options.intervalMs, "intervalMs");
    this.#clock = options.clock;
    this.#onEvent = options.onEvent ?? (() => {});
    const tick = () => this.runOnce().then(() => {}, (error: unknown) => this.#onEvent({ type: "error", error }));
    // Unlike the purger's and the alerter's, this timer holds the process open while the scheduler runs.
    this.#repeater = new Repeater(tick, intervalMs, { keepAlive: true });
  }

  /** Runs a tick now, then one `intervalMs` after each tick ends, until {@link stop}. Resolves after the first tick. */
  start(): Promise<void> {
    return this.#repeater.start();
  }

  /** Stops ticking and waits for a tick in progress to finish. */
  async stop(): Promise<void> {
    await this.#repeater.stop();
    for (const callback of this.#stopped.splice(0)) callback();
  }

  /** Calls `callback` once after {@link stop}. */
  onStopped(callback: () => void): void {
    this.#stopped.push(callback);
  }

  /**
   * One tick: records finished runs as last successes, then enqueues (or skips, per
   * policy) every slot due at `now` (default: the clock, else the database's `now()`).
   * Due schedules are handled up to 100 per transaction; if a batch fails (one
   * schedule's jobs cannot be enqueued), they are retried one per transaction so the
   * others still run and the error names the schedule. Tests call this with explicit
   * instants instead of waiting.
   */
  async runOnce(now?: Date): Promise<SchedulerTick> {
    const at = now ?? (this.#clock ? new Date(this.#clock.now()) : await this.#databaseNow());
    if (Number.isNaN(at.getTime())) throw new ValidationError("now", "must be a valid Date");
    const events: SchedulerEvent[] = [];
    const emit = (event: SchedulerEvent) => {
      events.push(event);
      this.#onEvent(event);
    };
    await this.#driver.run(this.#queries.recordSuccesses, []);
    const handled: string[] = [];
    for (;;) {
      let result: { handled: string[]; events: SchedulerEvent[] };
      try {
        result = await this.#driver.transaction((tx) => handleDue(tx, this.#queries, this.#enqueue, at, batch, null, handled));
      } catch {
        await this.#oneByOne(at, handled, emit);
        break;
      }
      result.events.forEach(emit);
      handled.push(...result.handled);
      if (result.handled.length < batch) break;
    }
    return { now: at, events };
  }

  async #oneByOne(at: Date, handled: string[], emit: (event: SchedulerEvent) => void): Promise<void> {
    const { rows } = await this.#driver.run<{ name: string }>(this.#queries.dueNames, [at.toISOString(), 10_000]);
    for (const { name } of rows.filter((row) => !handled.includes(row.name))) {
      try {
        const result = await this.#driver.transaction((tx) => handleDue(tx, this.#queries, this.#enqueue, at, 1, [name], handled));
        result.events.forEach(emit);
      } catch (error) {
        emit({ type: "error", schedule: name, error });
      }
    }
  }

  async #databaseNow(): Promise<Date> {
    const { rows } = await this.#driver.run<{ now: Date | string }>(this.#queries.now, []);
    return toDate(rows[0]!.now);
  }
}
