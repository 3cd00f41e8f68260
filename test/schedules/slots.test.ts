import { describe, expect, it } from "vitest";
import { cronFor } from "../../src/schedules/spec.js";
import { type SlotInput, decideSlots } from "../../src/schedules/slots.js";

const hourly = cronFor("0 * * * *", "UTC");
const iso = (dates: readonly Date[]) => dates.map((d) => d.toISOString());
const base = (over: Partial<SlotInput>): SlotInput => ({
  cron: hourly,
  next: new Date("2026-01-01T01:00:00Z"),
  now: new Date("2026-01-01T01:00:05Z"),
  graceMs: 60_000,
  missed: "skip",
  catchUpLimit: 10,
  overlap: "skip",
  inFlight: false,
  ...over,
});
const outage = { now: new Date("2026-01-01T05:30:00Z") };

describe("decideSlots (pure)", () => {
  it("enqueues an on-time slot and moves to the next", () => {
    const decision = decideSlots(base({}));
    expect(iso(decision.enqueue)).toEqual(["2026-01-01T01:00:00.000Z"]);
    expect(decision.next?.toISOString()).toBe("2026-01-01T02:00:00.000Z");
    expect(decision.missed).toBeNull();
  });

  it("counts a slot older than the grace period as missed", () => {
    const late = decideSlots(base({ now: new Date("2026-01-01T01:01:01Z") }));
    expect(late.enqueue).toEqual([]);
    expect(late.missed?.to.toISOString()).toBe("2026-01-01T01:00:00.000Z");
    const inGrace = decideSlots(base({ now: new Date("2026-01-01T01:00:59Z") }));
    expect(iso(inGrace.enqueue)).toEqual(["2026-01-01T01:00:00.000Z"]);
  });

  it("missed 'skip' drops every missed slot, 'latest' keeps the most recent, 'catch_up' the last N", () => {
    const skip = decideSlots(base({ ...outage, missed: "skip" }));
    expect(skip.enqueue).toEqual([]);
    expect(skip.missed).toMatchObject({ from: new Date("2026-01-01T01:00:00Z"), to: new Date("2026-01-01T05:00:00Z") });
    expect(skip.next?.toISOString()).toBe("2026-01-01T06:00:00.000Z");

    const latest = decideSlots(base({ ...outage, missed: "latest" }));
    expect(iso(latest.enqueue)).toEqual(["2026-01-01T05:00:00.000Z"]);
    expect(latest.missed?.to.toISOString()).toBe("2026-01-01T04:00:00.000Z");

    const catchUp = decideSlots(base({ ...outage, missed: "catch_up", catchUpLimit: 3, overlap: "allow" }));
    expect(iso(catchUp.enqueue)).toEqual(["2026-01-01T03:00:00.000Z", "2026-01-01T04:00:00.000Z", "2026-01-01T05:00:00.000Z"]);
    expect(catchUp.missed).toMatchObject({ from: new Date("2026-01-01T01:00:00Z"), to: new Date("2026-01-01T02:00:00Z") });
    expect(catchUp.next?.toISOString()).toBe("2026-01-01T06:00:00.000Z");
  });

  it("overlap 'skip' records the slot as skipped while the previous run is in flight", () => {
    const decision = decideSlots(base({ inFlight: true }));
    expect(decision.enqueue).toEqual([]);
    expect(decision.skipped).toEqual([{ slot: new Date("2026-01-01T01:00:00Z"), reason: expect.stringContaining("still ready or running") }]);
    expect(decision.next?.toISOString()).toBe("2026-01-01T02:00:00.000Z");
  });

  it("catch_up with overlap 'skip' runs the backlog one at a time instead of skipping it", () => {
    const waiting = decideSlots(base({ ...outage, missed: "catch_up", catchUpLimit: 3, inFlight: true }));
    expect(waiting.enqueue).toEqual([]);
    expect(waiting.skipped).toEqual([]);
    expect(waiting.next?.toISOString()).toBe("2026-01-01T03:00:00.000Z");
    const free = decideSlots(base({ ...outage, missed: "catch_up", catchUpLimit: 3 }));
    expect(iso(free.enqueue)).toEqual(["2026-01-01T03:00:00.000Z"]);
    expect(free.next?.toISOString()).toBe("2026-01-01T04:00:00.000Z");
  });

  it("interval schedules follow elapsed time across DST: every real hour, none doubled or lost", () => {
    // Europe/Berlin falls back at 03:00 CEST (01:00Z) on 2026-10-25: local 02:00 happens twice.
    const berlinHourly = cronFor("0 * * * *", "Europe/Berlin");
    const decision = decideSlots(base({ cron: berlinHourly, next: new Date("2026-10-24T23:00:00Z"), now: new Date("2026-10-25T02:00:30Z"), overlap: "allow" }));
    expect(iso(decision.enqueue)).toEqual(["2026-10-25T02:00:00.000Z"]);
    expect(decision.missed).toMatchObject({ from: new Date("2026-10-24T23:00:00Z"), to: new Date("2026-10-25T01:00:00Z") });
    const slots = [];
    for (let s: Date | null = new Date("2026-10-24T23:00:00Z"); s && s < new Date("2026-10-25T03:00:00Z"); s = berlinHourly.nextRun(s)) slots.push(s);
    expect(iso(slots)).toEqual(["2026-10-24T23:00:00.000Z", "2026-10-25T00:00:00.000Z", "2026-10-25T01:00:00.000Z", "2026-10-25T02:00:00.000Z"]);
  });
});
