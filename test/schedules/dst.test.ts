import { describe, expect, it } from "vitest";
import { useTestErrand } from "../support/db.js";

// The DST promise: a fixed local time runs once per day on both transition days of 2026.
// A slot that does not exist (spring forward) runs at the first valid time after the gap;
// a slot that happens twice (fall back) runs at its first occurrence only.
const t = useTestErrand();

/** Declares one schedule at `from`, ticks every 30 minutes (on the slots' own instants) until `to`, returns the slots enqueued (UTC). */
async function slotsBetween(cron: string, timezone: string, from: string, to: string): Promise<string[]> {
  const clock = { at: Date.parse(from), now: () => clock.at };
  const schedules = t.errand.schedules.withClock(clock);
  await schedules.declare([{ name: "dst", cron, timezone, kind: "dst_check", overlap: "allow" }]);
  const scheduler = schedules.scheduler();
  for (let at = Date.parse(from); at <= Date.parse(to); at += 30 * 60_000) {
    await scheduler.runOnce(new Date(at));
  }
  const rows = await t.sql<{ run_at: Date; dedupe_key: string }>(`SELECT run_at, dedupe_key FROM ${t.schema}.all_jobs ORDER BY run_at`);
  for (const row of rows) expect(row.dedupe_key).toBe(`schedule:dst:${new Date(row.run_at).toISOString()}`);
  return rows.map((row) => new Date(row.run_at).toISOString());
}

/** The wall-clock time of `iso` in `timezone`, e.g. "03:00". */
function local(iso: string, timezone: string): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone: timezone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(new Date(iso));
}

describe("schedules across DST (2026)", () => {
  it("America/New_York spring forward (8 March): 02:30 does not exist and runs once, at 03:00 EDT", async () => {
    const slots = await slotsBetween("30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", "2026-03-09T12:00:00Z");
    expect(slots).toEqual(["2026-03-07T07:30:00.000Z", "2026-03-08T07:00:00.000Z", "2026-03-09T06:30:00.000Z"]);
    expect(slots.map((s) => local(s, "America/New_York"))).toEqual(["02:30", "03:00", "02:30"]);
  });

  it("America/New_York fall back (1 November): 01:30 happens twice and runs once, at 01:30 EDT", async () => {
    const slots = await slotsBetween("30 1 * * *", "America/New_York", "2026-10-31T00:00:00Z", "2026-11-02T12:00:00Z");
    expect(slots).toEqual(["2026-10-31T05:30:00.000Z", "2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z"]);
    expect(slots.map((s) => local(s, "America/New_York"))).toEqual(["01:30", "01:30", "01:30"]);
  });

  it("Europe/Berlin spring forward (29 March): 02:30 does not exist and runs once, at 03:00 CEST", async () => {
    const slots = await slotsBetween("30 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z", "2026-03-30T12:00:00Z");
    expect(slots).toEqual(["2026-03-28T01:30:00.000Z", "2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"]);
    expect(slots.map((s) => local(s, "Europe/Berlin"))).toEqual(["02:30", "03:00", "02:30"]);
  });

  it("Europe/Berlin fall back (25 October): 02:30 happens twice and runs once, at 02:30 CEST", async () => {
    const slots = await slotsBetween("30 2 * * *", "Europe/Berlin", "2026-10-24T00:00:00Z", "2026-10-26T12:00:00Z");
    expect(slots).toEqual(["2026-10-24T00:30:00.000Z", "2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
    expect(slots.map((s) => local(s, "Europe/Berlin"))).toEqual(["02:30", "02:30", "02:30"]);
  });

  it("a fall-back repeat still runs once when the scheduler ticks inside the repeated hour", async () => {
    // New York: 01:00–02:00 local happens twice on 1 November (05:00Z–06:00Z EDT, 06:00Z–07:00Z EST).
    const clock = { at: Date.parse("2026-11-01T05:00:00Z"), now: () => clock.at };
    const schedules = t.errand.schedules.withClock(clock);
    await schedules.declare([{ name: "repeat", cron: "30 1 * * *", timezone: "America/New_York", kind: "k" }]);
    const scheduler = schedules.scheduler();
    for (const at of ["2026-11-01T05:30:10Z", "2026-11-01T06:10:00Z", "2026-11-01T06:30:10Z", "2026-11-01T06:59:00Z"]) {
      await scheduler.runOnce(new Date(at));
    }
    expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: 1 }]);
    const [info] = await t.errand.schedules.list();
    expect(info!.nextRun?.toISOString()).toBe("2026-11-02T06:30:00.000Z");
  });
});
