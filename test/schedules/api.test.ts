import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ErrandError, NotFoundError, type Schedules, type ScheduleSpec, ValidationError } from "../../src/index.js";
import { type TestErrand, eventually, testErrand } from "../support/db.js";

let t: TestErrand;
let clock: { at: number; now(): number };
let schedules: Schedules;
beforeEach(async () => {
  t = await testErrand();
  clock = { at: Date.parse("2026-01-01T00:00:00Z"), now: () => clock.at };
  schedules = t.errand.schedules.withClock(clock);
});
afterEach(() => t.cleanup());

const hourly = (over: Partial<ScheduleSpec> = {}): ScheduleSpec => ({ name: "hourly", cron: "0 * * * *", kind: "report", payload: { to: "ops" }, ...over });
const at = (iso: string) => new Date(iso);
const jobs = () => t.sql<{ id: string; run_at: Date; status: string; dedupe_key: string }>(`SELECT id, run_at, status, dedupe_key FROM ${t.schema}.all_jobs ORDER BY run_at`);
const slots = async () => (await jobs()).map((job) => new Date(job.run_at).toISOString());
const finish = (status = "done") => t.sql(`UPDATE ${t.schema}.jobs SET status = $1, finished_at = now() WHERE status IN ('ready', 'running')`, [status]);

describe("declaring schedules", () => {
  it("stores a schedule whose next run is the first slot after now, and lists it", async () => {
    const [info] = await schedules.declare([hourly({ timezone: "Europe/Berlin", maxAttempts: 3, priority: 5 })]);
    expect(info).toMatchObject({ name: "hourly", cron: "0 * * * *", timezone: "Europe/Berlin", kind: "report", payload: { to: "ops" }, overlap: "skip", missed: "skip", paused: false, jobOptions: { maxAttempts: 3, priority: 5 } });
    expect(info!.nextRun?.toISOString()).toBe("2026-01-01T01:00:00.000Z");
    expect(info!.lastSlot).toBeNull();
    expect(info!.lastSuccess).toBeNull();
  });

  it("accepts 5 fields, 6 fields (seconds first) and nicknames", async () => {
    const infos = await schedules.declare([
      { name: "five", cron: "15 3 * * 1-5", kind: "k" },
      { name: "six", cron: "30 */5 * * * *", kind: "k" },
      { name: "daily", cron: "@daily", kind: "k", timezone: "America/New_York" },
    ]);
    expect(Object.fromEntries(infos.map((i) => [i.name, i.nextRun?.toISOString()]))).toEqual({
      five: "2026-01-01T03:15:00.000Z",
      six: "2026-01-01T00:00:30.000Z",
      daily: "2026-01-01T05:00:00.000Z",
    });
  });

  it("rejects an invalid cron, time zone or policy with an error naming the field, writing nothing", async () => {
    const cases: [ScheduleSpec, string, RegExp][] = [
      [hourly({ cron: "61 * * * *" }), "schedules[1].cron", /not a valid cron expression/],
      [hourly({ cron: "* * * * * * *" }), "schedules[1].cron", /not a valid cron expression/],
      [hourly({ cron: "0 0 30 2 *" }), "schedules[1].cron", /never matches/],
      [hourly({ timezone: "Europe/Berlinn" }), "schedules[1].timezone", /did you mean 'Europe\/Berlin'/],
      [hourly({ timezone: "Mars/Olympus" }), "schedules[1].timezone", /unknown time zone/],
      [hourly({ overlap: "skp" as "skip" }), "schedules[1].overlap", /did you mean 'skip'/],
      [hourly({ missed: "catchup" as "catch_up" }), "schedules[1].missed", /did you mean 'catch_up'/],
      [{ ...hourly(), overlpa: "skip" } as ScheduleSpec, "schedules[1].overlpa", /did you mean 'overlap'/],
      [hourly({ name: "has space" }), "schedules[1].name", /letters, digits/],
    ];
    for (const [spec, field, message] of cases) {
      const error = await schedules.declare([hourly({ name: "fine" }), spec]).catch((e: unknown) => e);
      expect(error, field).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(field);
      expect((error as Error).message).toMatch(message);
    }
    await expect(schedules.declare([hourly(), hourly()])).rejects.toThrow(/declared twice/);
    expect(await schedules.list()).toEqual([]);
  });

  it("re-declaring keeps the schedule's place; changing its cron restarts it from now", async () => {
    await schedules.declare([hourly()]);
    clock.at = Date.parse("2026-01-01T00:30:00Z");
    const [same] = await schedules.declare([hourly({ payload: { to: "everyone" } })]);
    expect(same!.nextRun?.toISOString()).toBe("2026-01-01T01:00:00.000Z");
    expect(same!.payload).toEqual({ to: "everyone" });
    const [changed] = await schedules.declare([hourly({ cron: "45 * * * *" })]);
    expect(changed!.nextRun?.toISOString()).toBe("2026-01-01T00:45:00.000Z");
  });

  it("removeOthers makes the declared list the whole truth", async () => {
    await schedules.declare([hourly(), hourly({ name: "old" })]);
    await schedules.declare([hourly()], { removeOthers: true });
    expect((await schedules.list()).map((s) => s.name)).toEqual(["hourly"]);
  });
});

describe("the scheduler", () => {
  it("enqueues each due slot once, as a normal job keyed by schedule and slot", async () => {
    await schedules.declare([hourly({ maxAttempts: 3, priority: 5 })]);
    const scheduler = schedules.scheduler();
    expect((await scheduler.runOnce(at("2026-01-01T00:59:59Z"))).events).toEqual([]);
    const tick = await scheduler.runOnce(at("2026-01-01T01:00:02Z"));
    expect(tick.events).toEqual([{ type: "enqueued", schedule: "hourly", slot: at("2026-01-01T01:00:00Z"), jobId: expect.any(String) }]);
    await scheduler.runOnce(at("2026-01-01T01:00:03Z"));
    const [job] = await jobs();
    expect(await slots()).toEqual(["2026-01-01T01:00:00.000Z"]);
    expect(job!.dedupe_key).toBe("schedule:hourly:2026-01-01T01:00:00.000Z");
    expect(await t.errand.getJob(job!.id)).toMatchObject({ kind: "report", payload: { to: "ops" }, maxAttempts: 3, priority: 5, status: "ready" });
    const [info] = await schedules.list();
    expect(info).toMatchObject({ lastSlot: at("2026-01-01T01:00:00Z"), nextRun: at("2026-01-01T02:00:00Z"), lastEnqueued: { slot: at("2026-01-01T01:00:00Z"), jobId: String(job!.id), status: "ready" } });
  });

  it("overlap 'skip' (default) skips a slot while the previous run is ready or running, and records why", async () => {
    await schedules.declare([hourly()]);
    const scheduler = schedules.scheduler();
    await scheduler.runOnce(at("2026-01-01T01:00:01Z"));
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', locked_until = now() + interval '1 minute'`);
    const tick = await scheduler.runOnce(at("2026-01-01T02:00:01Z"));
    expect(tick.events).toEqual([{ type: "skipped", schedule: "hourly", slot: at("2026-01-01T02:00:00Z"), reason: expect.stringMatching(/still ready or running/) }]);
    expect((await schedules.list())[0]!.lastSkipped).toEqual({ slot: at("2026-01-01T02:00:00Z"), reason: expect.stringMatching(/overlap/) });
    expect(await t.sql(`SELECT slot, job_id, skipped IS NOT NULL AS skipped FROM ${t.schema}.schedule_runs ORDER BY slot`)).toHaveLength(2);
    await finish();
    await scheduler.runOnce(at("2026-01-01T03:00:01Z"));
    expect(await slots()).toEqual(["2026-01-01T01:00:00.000Z", "2026-01-01T03:00:00.000Z"]);
  });

  it("overlap 'allow' enqueues the next slot even while the previous run is running", async () => {
    await schedules.declare([hourly({ overlap: "allow" })]);
    const scheduler = schedules.scheduler();
    await scheduler.runOnce(at("2026-01-01T01:00:01Z"));
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', locked_until = now() + interval '1 minute'`);
    await scheduler.runOnce(at("2026-01-01T02:00:01Z"));
    expect(await slots()).toEqual(["2026-01-01T01:00:00.000Z", "2026-01-01T02:00:00.000Z"]);
  });

  it("missed 'skip' (default) drops slots no scheduler reached in time and goes on with the next", async () => {
    await schedules.declare([hourly()]);
    const scheduler = schedules.scheduler();
    const tick = await scheduler.runOnce(at("2026-01-01T05:30:00Z"));
    expect(tick.events).toEqual([{ type: "missed", schedule: "hourly", from: at("2026-01-01T01:00:00Z"), to: at("2026-01-01T05:00:00Z"), reason: expect.stringMatching(/missed/) }]);
    expect(await slots()).toEqual([]);
    const [info] = await schedules.list();
    expect(info).toMatchObject({ nextRun: at("2026-01-01T06:00:00Z"), lastSlot: at("2026-01-01T05:00:00Z"), lastSkipped: { slot: at("2026-01-01T05:00:00Z") }, lastEnqueued: null });
    await scheduler.runOnce(at("2026-01-01T06:00:10Z"));
    expect(await slots()).toEqual(["2026-01-01T06:00:00.000Z"]);
  });

  it("a slot reached within the grace period is on time; one past it is missed", async () => {
    await schedules.declare([hourly({ graceMs: 120_000 })]);
    const scheduler = schedules.scheduler();
    await scheduler.runOnce(at("2026-01-01T01:01:59Z"));
    await finish();
    await scheduler.runOnce(at("2026-01-01T02:02:01Z"));
    expect(await slots()).toEqual(["2026-01-01T01:00:00.000Z"]);
  });

  it("missed 'latest' enqueues the most recent missed slot once", async () => {
    await schedules.declare([hourly({ missed: "latest" })]);
    const scheduler = schedules.scheduler();
    await scheduler.runOnce(at("2026-01-01T05:30:00Z"));
    await scheduler.runOnce(at("2026-01-01T05:40:00Z"));
    expect(await slots()).toEqual(["2026-01-01T05:00:00.000Z"]);
  });

  it("missed 'catch_up' enqueues every missed slot up to the limit (the most recent ones)", async () => {
    await schedules.declare([hourly({ missed: "catch_up", catchUpLimit: 3, overlap: "allow" })]);
    await schedules.scheduler().runOnce(at("2026-01-01T05:30:00Z"));
    expect(await slots()).toEqual(["2026-01-01T03:00:00.000Z", "2026-01-01T04:00:00.000Z", "2026-01-01T05:00:00.000Z"]);
    expect((await schedules.list())[0]!.lastSkipped).toEqual({ slot: at("2026-01-01T02:00:00Z"), reason: expect.stringMatching(/catch-up limit of 3/) });
  });

  it("missed 'catch_up' with overlap 'skip' runs the backlog one job at a time", async () => {
    await schedules.declare([hourly({ missed: "catch_up", catchUpLimit: 3 })]);
    const scheduler = schedules.scheduler();
    await scheduler.runOnce(at("2026-01-01T05:30:00Z"));
    await scheduler.runOnce(at("2026-01-01T05:31:00Z")); // previous still ready: wait, don't skip
    expect(await slots()).toEqual(["2026-01-01T03:00:00.000Z"]);
    for (const minute of [32, 33, 34]) {
      await finish();
      await scheduler.runOnce(at(`2026-01-01T05:${minute}:00Z`));
    }
    expect(await slots()).toEqual(["2026-01-01T03:00:00.000Z", "2026-01-01T04:00:00.000Z", "2026-01-01T05:00:00.000Z"]);
    expect((await schedules.list())[0]!.nextRun?.toISOString()).toBe("2026-01-01T06:00:00.000Z");
  });

  it("records the last successful run, so a missed slot and a failed one look different", async () => {
    await schedules.declare([hourly({ overlap: "allow" })]);
    const scheduler = schedules.scheduler();
    await scheduler.runOnce(at("2026-01-01T01:00:01Z"));
    const ran: unknown[] = [];
    const worker = t.errand.worker({ handlers: { report: async (payload) => void ran.push(payload) } });
    await worker.start();
    await eventually(async () => (await jobs())[0]?.status === "done", 10_000, "the scheduled job to finish");
    await worker.stop();
    expect(ran).toEqual([{ to: "ops" }]);
    await scheduler.runOnce(at("2026-01-01T02:00:01Z"));
    await finish("dead");
    const [info] = await schedules.list();
    expect(info!.lastSuccess).toMatchObject({ slot: at("2026-01-01T01:00:00Z"), at: expect.any(Date) });
    expect(info!.lastEnqueued).toMatchObject({ slot: at("2026-01-01T02:00:00Z"), status: "dead" });
  });
});

describe("many schedules", () => {
  it("one tick handles more due schedules than a batch (100), each once", async () => {
    await schedules.declare(Array.from({ length: 150 }, (_, i) => hourly({ name: `s${i}` })));
    const tick = await schedules.scheduler().runOnce(at("2026-01-01T01:00:01Z"));
    expect(tick.events.filter((e) => e.type === "enqueued")).toHaveLength(150);
    expect(await t.sql(`SELECT count(DISTINCT dedupe_key)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: 150 }]);
  });

  it("a schedule whose job cannot be enqueued reports an error naming it, and the others still run", async () => {
    const small = await testErrand({ maxPayloadBytes: 100 });
    try {
      const s = small.errand.schedules.withClock(clock);
      await s.declare([hourly({ name: "fine" }), hourly({ name: "too-big", payload: { blob: "x".repeat(500) } })]);
      const tick = await s.scheduler().runOnce(at("2026-01-01T01:00:01Z"));
      expect(tick.events).toEqual([
        { type: "enqueued", schedule: "fine", slot: at("2026-01-01T01:00:00Z"), jobId: expect.any(String) },
        { type: "error", schedule: "too-big", error: expect.objectContaining({ name: "ValidationError" }) },
      ]);
      const [fine, tooBig] = await s.list();
      expect(fine!.nextRun?.toISOString()).toBe("2026-01-01T02:00:00.000Z");
      expect(tooBig!.nextRun?.toISOString()).toBe("2026-01-01T01:00:00.000Z");
    } finally {
      await small.cleanup();
    }
  });
});

describe("pause, resume, remove", () => {
  it("a paused schedule enqueues nothing; resuming starts at the next slot after now", async () => {
    await schedules.declare([hourly()]);
    await schedules.pause("hourly");
    const scheduler = schedules.scheduler();
    await scheduler.runOnce(at("2026-01-01T01:00:01Z"));
    expect((await schedules.list())[0]).toMatchObject({ paused: true, nextRun: null });
    clock.at = Date.parse("2026-01-01T03:30:00Z");
    await schedules.resume("hourly");
    expect((await schedules.list())[0]).toMatchObject({ paused: false, nextRun: at("2026-01-01T04:00:00Z") });
    await scheduler.runOnce(at("2026-01-01T04:00:01Z"));
    expect(await slots()).toEqual(["2026-01-01T04:00:00.000Z"]);
    // Re-declaring at deploy does not unpause.
    await schedules.pause("hourly");
    await schedules.declare([hourly()]);
    expect((await schedules.list())[0]!.paused).toBe(true);
  });

  it("remove deletes the schedule and keeps the jobs it enqueued; unknown names get a hint", async () => {
    await schedules.declare([hourly()]);
    await schedules.scheduler().runOnce(at("2026-01-01T01:00:01Z"));
    await schedules.remove("hourly");
    expect(await schedules.list()).toEqual([]);
    expect(await slots()).toHaveLength(1);
    await schedules.declare([hourly({ name: "nightly" })]);
    const error = await schedules.pause("nighty").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as ErrandError).code).toBe("not_found");
    expect((error as Error).message).toMatch(/did you mean 'nightly'/);
    await expect(schedules.resume("nope")).rejects.toThrow(/no schedule named 'nope'/);
    await expect(schedules.remove("nope")).rejects.toThrow(/no schedule named 'nope'/);
  });
});
