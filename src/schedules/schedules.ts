import type { Clock } from "../clock.js";
import { NotFoundError, ValidationError } from "../errors.js";
import type { Driver, Queryable } from "../driver/types.js";
import { checkKeys, closest } from "../validate.js";
import { type ScheduleQueries, scheduleQueriesFor } from "../sql/schedules.js";
import { type ScheduleInfo, type ScheduleRow, toDate, toScheduleInfo } from "./info.js";
import { type ScheduleSpec, checkName, cronFor, resolveSchedule } from "./spec.js";
import { type StandardSchemaV1, type UntypedJobs, validatePayloads } from "../jobs.js";
import { type EnqueueFn, Scheduler, type SchedulerOptions } from "./scheduler.js";

/** Options for {@link Schedules.declare}. */
export interface DeclareOptions {
  /** Also remove stored schedules that are not in this list (the list is the whole truth). Default false. */
  readonly removeOthers?: boolean;
}

/**
 * Recurring jobs: declare, list, pause, resume and remove schedules, and create the
 * {@link Scheduler} that enqueues their slots. Reached as `errand.schedules`.
 *
 * @example
 * ```ts
 * await errand.schedules.declare([
 *   { name: "nightly-report", cron: "0 2 * * *", timezone: "America/New_York", kind: "send_report" },
 *   { name: "sweep", cron: "*\/5 * * * *", kind: "sweep", overlap: "allow", missed: "catch_up", catchUpLimit: 3 },
 * ]);
 * const scheduler = errand.schedules.scheduler();
 * await scheduler.start();
 * ```
 */
export class Schedules<Jobs = UntypedJobs> {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #queries: ScheduleQueries;
  readonly #enqueue: EnqueueFn;
  readonly #clock: Clock | undefined;
  readonly #schedulers: Set<Scheduler>;
  readonly #schemas: ReadonlyMap<string, StandardSchemaV1>;

  /** Prefer `errand.schedules`. `schemas` (from `defineJobs`) check declared payloads. */
  constructor(
    driver: Driver,
    schema: string,
    enqueue: EnqueueFn,
    clock?: Clock,
    schedulers: Set<Scheduler> = new Set(),
    schemas: ReadonlyMap<string, StandardSchemaV1> = new Map(),
  ) {
    this.#driver = driver;
    this.#schema = schema;
    this.#queries = scheduleQueriesFor(schema);
    this.#enqueue = enqueue;
    this.#clock = clock;
    this.#schedulers = schedulers;
    this.#schemas = schemas;
  }

  /** The same schedules, reading "now" from `clock` (tests) instead of the database. */
  withClock(clock: Clock): Schedules<Jobs> {
    return new Schedules<Jobs>(this.#driver, this.#schema, this.#enqueue, clock, this.#schedulers, this.#schemas);
  }

  /**
   * Creates or updates schedules (idempotent: call it at every start). A new schedule
   * starts with the first slot after now. Updating one keeps its next slot, pause and
   * history, unless its cron or time zone changed: then it restarts from now. Invalid
   * input throws a {@link ValidationError} naming the field, and nothing is written. On a
   * typed errand each schedule's kind and payload are checked against the job map by the
   * compiler, and a payload whose kind has a schema by the schema (its output is stored).
   */
  async declare(specs: readonly ScheduleSpec<Jobs>[], options: DeclareOptions = {}): Promise<ScheduleInfo[]> {
    if (!Array.isArray(specs)) throw new ValidationError("schedules", "must be an array of schedules");
    const list = await validatePayloads<ScheduleSpec>(specs, this.#schemas, (i) => `schedules[${i}].payload`);
    checkKeys(options, "", ["removeOthers"]);
    const resolved = list.map((spec, i) => resolveSchedule(spec, `schedules[${i}]`));
    const seen = new Set<string>();
    resolved.forEach((schedule, i) => {
      if (seen.has(schedule.name)) throw new ValidationError(`schedules[${i}].name`, `'${schedule.name}' is declared twice`);
      seen.add(schedule.name);
    });
    await this.#driver.transaction(async (tx) => {
      const now = await this.#now(tx);
      const column = <T>(pick: (s: (typeof resolved)[number]) => T) => resolved.map(pick);
      await tx.query(this.#queries.upsert.text, [
        column((s) => s.name), column((s) => s.cron), column((s) => s.timezone), column((s) => s.kind),
        column((s) => s.payload), column((s) => JSON.stringify(s.jobOptions)), column((s) => s.overlap), column((s) => s.missed),
        column((s) => s.catchUpLimit), column((s) => s.graceMs),
        column((s) => cronFor(s.cron, s.timezone).nextRun(now)?.toISOString() ?? null),
      ]);
      if (options.removeOthers) await tx.query(this.#queries.removeOthers.text, [[...seen]]);
    });
    return (await this.list()).filter((info) => seen.has(info.name));
  }

  /** Every schedule, by name, with its next run, last slot, last success and last skip. */
  async list(): Promise<ScheduleInfo[]> {
    await this.#driver.run(this.#queries.recordSuccesses, []);
    const { rows } = await this.#driver.run<ScheduleRow>(this.#queries.list, [null]);
    return rows.map(toScheduleInfo);
  }

  /** One schedule, or null. */
  async get(name: string): Promise<ScheduleInfo | null> {
    await this.#driver.run(this.#queries.recordSuccesses, []);
    const { rows } = await this.#driver.run<ScheduleRow>(this.#queries.list, [checkName(name)]);
    return rows[0] ? toScheduleInfo(rows[0]) : null;
  }

  /** Stops enqueueing this schedule's slots until {@link resume}. Jobs already enqueued still run. */
  async pause(name: string): Promise<void> {
    await this.#change("pause", name, []);
  }

  /** Enqueues again from the first slot after now: slots that fell in the pause are not caught up. */
  async resume(name: string): Promise<void> {
    checkName(name);
    await this.#driver.transaction(async (tx) => {
      const { rows } = await tx.query<ScheduleRow>(this.#queries.list.text, [name]);
      if (!rows[0]) throw await this.#notFound(name, tx);
      const next = cronFor(rows[0].cron, rows[0].timezone).nextRun(await this.#now(tx));
      await tx.query(this.#queries.resume.text, [name, next?.toISOString() ?? null]);
    });
  }

  /** Deletes the schedule and its run history; jobs it already enqueued are kept. */
  async remove(name: string): Promise<void> {
    await this.#change("remove", name, []);
  }

  /** A scheduler service (start/stop/runOnce); `errand.close()` stops it. */
  scheduler(options: SchedulerOptions = {}): Scheduler {
    const scheduler = new Scheduler(this.#driver, this.#schema, this.#enqueue, { ...(this.#clock ? { clock: this.#clock } : {}), ...options });
    this.#schedulers.add(scheduler);
    scheduler.onStopped(() => this.#schedulers.delete(scheduler));
    return scheduler;
  }

  /** Stops every scheduler created here (called by `errand.close()`). */
  async stopSchedulers(): Promise<void> {
    await Promise.all([...this.#schedulers].map((scheduler) => scheduler.stop()));
  }

  async #change(query: "pause" | "remove", name: string, params: unknown[]): Promise<void> {
    const { rows } = await this.#driver.run<{ name: string }>(this.#queries[query], [checkName(name), ...params]);
    if (rows.length === 0) throw await this.#notFound(name);
  }

  async #notFound(name: string, db?: Queryable): Promise<NotFoundError> {
    const { rows } = db ? await db.query<ScheduleRow>(this.#queries.list.text, [null]) : await this.#driver.run<ScheduleRow>(this.#queries.list, [null]);
    const names = rows.map((row) => row.name);
    const hint = closest(name, names);
    return new NotFoundError(`no schedule named '${name}'${hint ? ` — did you mean '${hint}'?` : ""} (${names.length ? `schedules: ${names.join(", ")}` : "no schedules are declared"})`);
  }

  async #now(db: Queryable): Promise<Date> {
    if (this.#clock) return new Date(this.#clock.now());
    const { rows } = await db.query<{ now: Date | string }>(this.#queries.now.text, []);
    return toDate(rows[0]!.now);
  }
}
