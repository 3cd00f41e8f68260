import { PGlite } from "@electric-sql/pglite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pgliteDriver } from "../../src/driver/pglite.js";
import { Errand, type SchedulerEvent } from "../../src/index.js";
import { type TestErrand, eventually, onPostgres, testErrand } from "../support/db.js";

// Two schedulers, each with its own client (its own pool on PostgreSQL), racing on one
// database: every slot must become exactly one job.
let t: TestErrand;
let other: Errand;
beforeEach(async () => {
  t = await testErrand();
  other = onPostgres
    ? await Errand.open({ connectionString: process.env.ERRAND_TEST_URL!, schema: t.schema, migrate: false })
    : Errand.fromDriver(pgliteDriver(t.db as PGlite, false), { schema: t.schema });
});
afterEach(async () => {
  await other.close();
  await t.cleanup();
});

const t0 = Date.parse("2026-06-01T12:00:00Z");
const second = (n: number) => new Date(t0 + n * 1000);

describe("two schedulers on one database", () => {
  it("enqueue each slot exactly once, however their ticks interleave", async () => {
    const clock = { now: () => t0 };
    const specs = [
      { name: "every-second", cron: "* * * * * *", kind: "tick", overlap: "allow" as const, graceMs: 3_600_000 },
      { name: "every-5s", cron: "*/5 * * * * *", kind: "tick", overlap: "allow" as const, graceMs: 3_600_000 },
      { name: "skip-overlap", cron: "*/2 * * * * *", kind: "tick", graceMs: 3_600_000 },
    ];
    // Both declare at start-up, as two worker processes would.
    await Promise.all([t.errand.schedules.withClock(clock).declare(specs), other.schedules.withClock(clock).declare(specs)]);
    const events: SchedulerEvent[] = [];
    const a = t.errand.schedules.scheduler({ onEvent: (e) => events.push(e) });
    const b = other.schedules.scheduler({ onEvent: (e) => events.push(e) });

    // 30 seconds of ticks from both, all in flight at once (and some out of order).
    const ticks = Array.from({ length: 30 }, (_, i) => i + 1).flatMap((n) => [a.runOnce(second(n)), b.runOnce(second(31 - n)), b.runOnce(second(n))]);
    await Promise.all(ticks);
    // A tick that found a schedule locked by the other scheduler (working on an earlier
    // instant) left it alone; the next tick catches up, as it would a second later.
    await a.runOnce(second(30));

    const rows = await t.sql<{ key: string; n: number }>(
      `SELECT dedupe_key AS key, count(*)::int AS n FROM ${t.schema}.all_jobs GROUP BY dedupe_key ORDER BY dedupe_key`,
    );
    expect(rows.every((row) => row.n === 1)).toBe(true);
    const perSchedule = (name: string) => rows.filter((row) => row.key.startsWith(`schedule:${name}:`)).length;
    expect(perSchedule("every-second")).toBe(30);
    expect(perSchedule("every-5s")).toBe(6);
    // Overlap 'skip': the first job is still ready, so every later slot was skipped — once.
    expect(perSchedule("skip-overlap")).toBe(1);
    const skipped = events.filter((e) => e.type === "skipped" && e.schedule === "skip-overlap");
    expect(skipped).toHaveLength(14);
    expect(new Set(skipped.map((e) => (e.type === "skipped" ? e.slot.toISOString() : ""))).size).toBe(14);

    // Each enqueue was reported by exactly one of the two schedulers.
    expect(events.filter((e) => e.type === "enqueued")).toHaveLength(37);
    expect(events.filter((e) => e.type === "error")).toEqual([]);
    const runs = await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.schedule_runs`);
    expect(runs).toEqual([{ n: 37 + 14 }]);
  });

  it("started schedulers in a loop also agree (real timers, one slot per second)", async () => {
    // Slots are seconds of the wall clock (the database's now()), so the bound counts wall-clock
    // seconds too: a machine whose clock is stepped forward meanwhile has more slots due.
    const started = Date.now();
    await t.errand.schedules.declare([{ name: "live", cron: "* * * * * *", kind: "tick", overlap: "allow" }]);
    const a = t.errand.schedules.scheduler({ intervalMs: 50 });
    const b = other.schedules.scheduler({ intervalMs: 50 });
    await Promise.all([a.start(), b.start()]);
    const count = async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`))[0]!.n;
    await eventually(async () => (await count()) >= 3, 15_000, "three slots to be enqueued");
    await Promise.all([a.stop(), b.stop()]);
    const rows = await t.sql<{ n: number; distinct: number }>(`SELECT count(*)::int AS n, count(DISTINCT run_at)::int AS distinct FROM ${t.schema}.all_jobs`);
    expect(rows[0]!.n).toBe(rows[0]!.distinct);
    expect(rows[0]!.n).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / 1000) + 1);
  });
});
