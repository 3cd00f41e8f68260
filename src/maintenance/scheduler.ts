import type { Clock } from "../clock.js";
import type { EnqueueResult, JobSpec, SqlClient } from "../client.js";
import { ValidationError } from "../errors.js";
import type { Driver, Transaction } from "../driver/types.js";
import { parseJson } from "../job.js";
import { positiveMs } from "../options.js";
import { type ScheduleQueries, scheduleQueriesFor } from "../sql/schedules.js";
import { type ScheduleRow, toDate } from "./schedule-info.js";
import { type MissedPolicy, type OverlapPolicy, type ScheduleJobOptions, cronFor } from "./schedule-spec.js";
import { planSlots } from "./slots.js";

/** How errand's own enqueue is reached (so scheduled jobs get the kind's defaults and validation). */
export type EnqueueFn = (specs: readonly JobSpec[], options: { readonly db?: SqlClient }) => Promise<EnqueueResult[]>;

/** Options for a {@link Scheduler}. */
export interface SchedulerOptions {
  /** How often to look for due slots. Default 1000 ms. */
  readonly intervalMs?: number;
  /** Where "now" comes from. Default: the database's `now()`, so every scheduler agrees. */
  readonly clock?: Clock;
  /** Receives every enqueue, skip, missed range and error (for logs and tests). */
  readonly onEvent?: (event: SchedulerEvent) => void;
}

/** What a scheduler reports. */
export type SchedulerEvent =
  | { readonly type: "enqueued"; readonly schedule: string; readonly slot: Date; readonly jobId: string }
  | { readonly type: "skipped"; readonly schedule: string; readonly slot: Date; readonly reason: string }
  | { readonly type: "missed"; readonly schedule: string; readonly from: Date; readonly to: Date; readonly reason: string }
  | { readonly type: "error"; readonly schedule?: string; readonly error: unknown };

/** What one {@link Scheduler.runOnce} did. */
export interface SchedulerTick {
  /** The instant the tick planned for. */
  readonly now: Date;
  readonly events: readonly SchedulerEvent[];
}

const batch = 100;
const runRetentionMs = 7 * 24 * 3600_000;

/**
 * Turns due schedule slots into ordinary jobs. Run one in every worker process if you
 * like: each schedule's row is locked with `FOR UPDATE SKIP LOCKED` and advanced in the
 * same transaction as its jobs are inserted, so every slot is enqueued once. Create one
 * with `errand.schedules.scheduler()`.
 *
 * @example
 * ```ts
 * const scheduler = errand.schedules.scheduler();
 * await scheduler.start();   // ticks every second
 * // …
 * await scheduler.stop();
 * ```
 */
export class Scheduler {
  readonly #driver: Driver;
  readonly #queries: ScheduleQueries;
  readonly #enqueue: EnqueueFn;
  readonly #intervalMs: number;
  readonly #clock: Clock | undefined;
  readonly #onEvent: (event: SchedulerEvent) => void;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #tick: Promise<unknown> = Promise.resolve();
  #stopped: (() => void)[] = [];

  /** Prefer `errand.schedules.scheduler()`. */
  constructor(driver: Driver, schema: string, enqueue: EnqueueFn, options: SchedulerOptions = {}) {
    for (const key of Object.keys(options)) {
      if (!["intervalMs", "clock", "onEvent"].includes(key)) throw new ValidationError(key, "unknown option (known: intervalMs, clock, onEvent)");
    }
    this.#driver = driver;
    this.#queries = scheduleQueriesFor(schema);
    this.#enqueue = enqueue;
    this.#intervalMs = options.intervalMs === undefined ? 1000 : positiveMs(options.intervalMs, "intervalMs");
    this.#clock = options.clock;
    this.#onEvent = options.onEvent ?? (() => {});
  }

  /** Runs a tick now, then one every `intervalMs` until {@link stop}. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    const loop = async (): Promise<void> => {
      if (!this.#running) return;
      this.#tick = this.runOnce().catch((error: unknown) => this.#onEvent({ type: "error", error }));
      await this.#tick;
      if (this.#running) this.#timer = setTimeout(() => void loop(), this.#intervalMs);
    };
    await loop();
  }

  /** Stops ticking and waits for a tick in progress to finish. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#tick;
    for (const callback of this.#stopped.splice(0)) callback();
  }

  /** Calls `callback` once after {@link stop}. */
  onStopped(callback: () => void): void {
    this.#stopped.push(callback);
  }

  /**
   * One tick: records finished runs as last successes, then enqueues (or skips, per
   * policy) every slot due at `now` (default: the clock, else the database's `now()`).
   * Tests call this with explicit instants instead of waiting.
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
    const failed = new Set<string>();
    for (let round = 0; round < 10; round++) {
      const { rows } = await this.#driver.run<{ name: string }>(this.#queries.dueNames, [at.toISOString(), batch]);
      const names = rows.map((row) => row.name).filter((name) => !failed.has(name));
      for (const name of names) {
        try {
          const done = await this.#driver.transaction((tx) => this.#handle(tx, name, at));
          for (const event of done) emit(event);
        } catch (error) {
          failed.add(name);
          emit({ type: "error", schedule: name, error });
        }
      }
      if (rows.length < batch) break;
    }
    return { now: at, events };
  }

  async #databaseNow(): Promise<Date> {
    const { rows } = await this.#driver.run<{ now: Date | string }>(this.#queries.now, []);
    return toDate(rows[0]!.now);
  }

  /** Handles one due schedule inside a transaction; returns what happened (emitted after commit). */
  async #handle(tx: Transaction, name: string, now: Date): Promise<SchedulerEvent[]> {
    const q = this.#queries;
    const { rows } = await tx.query<ScheduleRow>(q.lockDue.text, [name, now.toISOString()]);
    const row = rows[0];
    if (!row || row.next_slot === null) return []; // another scheduler has it, or did it already
    const overlap = row.overlap as OverlapPolicy;
    let inFlight = false;
    if (overlap === "skip" && row.last_job_id !== null) {
      const status = await tx.query<{ status: string }>(q.jobStatus.text, [row.last_job_id]);
      inFlight = status.rows[0]?.status === "ready" || status.rows[0]?.status === "running";
    }
    const plan = planSlots({
      cron: cronFor(row.cron, row.timezone),
      next: toDate(row.next_slot),
      now,
      graceMs: Number(row.grace_ms),
      missed: row.missed as MissedPolicy,
      catchUpLimit: Number(row.catch_up_limit),
      overlap,
      inFlight,
    });

    const options = (parseJson(row.job_options) ?? {}) as ScheduleJobOptions;
    const payload = parseJson(row.payload);
    const results = await this.#enqueue(
      plan.enqueue.map((slot) => ({ kind: row.kind, payload, ...options, runAt: slot, dedupeKey: `schedule:${row.name}:${slot.toISOString()}` })),
      { db: tx },
    );
    const events: SchedulerEvent[] = [];
    const runs = { slots: [] as string[], jobs: [] as (string | null)[], reasons: [] as (string | null)[] };
    plan.enqueue.forEach((slot, i) => {
      runs.slots.push(slot.toISOString());
      runs.jobs.push(results[i]!.id);
      runs.reasons.push(null);
      events.push({ type: "enqueued", schedule: row.name, slot, jobId: results[i]!.id });
    });
    for (const { slot, reason } of plan.skipped) {
      runs.slots.push(slot.toISOString());
      runs.jobs.push(null);
      runs.reasons.push(reason);
      events.push({ type: "skipped", schedule: row.name, slot, reason });
    }
    if (plan.missed) events.push({ type: "missed", schedule: row.name, ...plan.missed });
    if (runs.slots.length > 0) await tx.query(q.insertRuns.text, [row.name, runs.slots, runs.jobs, runs.reasons]);

    const lastEnqueued = plan.enqueue.at(-1);
    const lastSkipped = [...plan.skipped.map((s) => ({ slot: s.slot, reason: s.reason })), ...(plan.missed ? [{ slot: plan.missed.to, reason: plan.missed.reason }] : [])]
      .sort((a, b) => a.slot.getTime() - b.slot.getTime())
      .at(-1);
    await tx.query(q.advance.text, [
      row.name,
      plan.next?.toISOString() ?? null,
      plan.lastHandled?.toISOString() ?? null,
      lastEnqueued?.toISOString() ?? null,
      lastEnqueued ? results.at(-1)!.id : null,
      lastSkipped?.slot.toISOString() ?? null,
      lastSkipped?.reason ?? null,
    ]);
    await tx.query(q.pruneRuns.text, [row.name, new Date(now.getTime() - runRetentionMs).toISOString()]);
    return events;
  }
}
