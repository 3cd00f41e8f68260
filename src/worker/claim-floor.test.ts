import { describe, expect, it } from "vitest";
import type { ClaimRow } from "./claim.js";
import { ClaimFloor, before, fromStartShare, keyOf, maxPollIntervals } from "./claim-floor.js";

const pollMs = 1_000;

/** A claimed row with the given claim key; run_at in epoch microseconds. */
function row(priority: number, runAtUs: number, id: number): ClaimRow {
  return {
    id: String(id), kind: "k", payload: null, attempts: 1, started: true, max_attempts: 8, retry: null, timeout_ms: null,
    priority, run_at_ms: runAtUs / 1000, created_at_ms: runAtUs / 1000, checkpoint: null,
  };
}

/** A floor on a clock that moves only when the test says so. */
function floorAt(start = 50_000) {
  const clock = { now: start };
  const floor = new ClaimFloor({ now: () => clock.now }, pollMs);
  return { floor, clock };
}

const t = 1_764_600_000_123_456; // 2025-12-01 in epoch µs: the magnitude of a real run_at

describe("ClaimFloor", () => {
  it("starts from the start, then from the last row claimed in claim order", () => {
    const { floor, clock } = floorAt();
    const first = floor.start();
    expect(first.key).toBeUndefined();
    // Rows come back from UPDATE … RETURNING in no particular order.
    floor.claimed([row(0, t + 5, 9), row(5, t + 9, 12), row(0, t + 5, 7), row(0, t + 1, 30)], first, clock.now);
    expect(floor.start().key).toEqual({ priority: 0, runAtUs: t + 5, id: 9n });
  });

  it("keeps its key through an empty claim and never moves back", () => {
    const { floor, clock } = floorAt();
    floor.claimed([row(0, t, 4)], floor.start(), clock.now);
    const from = floor.start();
    floor.claimed([], from, clock.now);
    expect(floor.start().key).toEqual({ priority: 0, runAtUs: t, id: 4n });
    // A row the slack found below the key (a job of a transaction that committed late).
    floor.claimed([row(0, t - 50_000, 99)], floor.start(), clock.now);
    expect(floor.start().key?.id).toBe(4n);
  });

  it("expires one poll interval after the last claim from the start, and restarts the interval then", () => {
    const { floor, clock } = floorAt();
    floor.claimed([row(0, t, 1)], floor.start(), clock.now);
    clock.now += pollMs - 1;
    floor.claimed([row(0, t + 1, 2)], floor.start(), clock.now);
    expect(floor.start().key?.id).toBe(2n);
    clock.now += 1;
    const expired = floor.start();
    expect(expired.key).toBeUndefined();
    // The claim from the start finds a job given back below the old floor: the floor follows it down.
    floor.claimed([row(0, t - 10, 3)], expired, clock.now);
    expect(floor.start().key?.id).toBe(3n);
    clock.now += pollMs - 1;
    expect(floor.start().key?.id).toBe(3n);
  });

  it(`lives ${fromStartShare} times as long as a slow claim from the start took, at most ${maxPollIntervals} poll intervals`, () => {
    const { floor, clock } = floorAt();
    /** A claim from the start that takes `ms`; returns when it was sent. */
    const slowClaim = (ms: number, id: number) => {
      const from = floor.start();
      expect(from.key).toBeUndefined();
      const sent = clock.now;
      clock.now += ms;
      floor.claimed([row(0, t + id, id)], from, sent);
      return sent;
    };
    const sent = slowClaim(150, 1);
    clock.now = sent + fromStartShare * 150 - 1;
    expect(floor.start().key?.id).toBe(1n);
    clock.now += 1;
    const later = slowClaim(60_000, 2);
    clock.now = later + maxPollIntervals * pollMs - 1;
    expect(floor.start().key?.id).toBe(2n);
    clock.now += 1;
    // A fast claim from the start brings it back to one poll interval.
    const fast = slowClaim(1, 3);
    clock.now = fast + pollMs;
    expect(floor.start().key).toBeUndefined();
  });

  it("a drop sends the next claim to the start, and a claim in flight at the drop sets no floor", () => {
    const { floor, clock } = floorAt();
    floor.claimed([row(0, t, 1)], floor.start(), clock.now);
    const inFlight = floor.start();
    floor.drop();
    floor.claimed([row(0, t + 1, 2)], inFlight, clock.now);
    expect(floor.start().key).toBeUndefined();
    floor.claimed([row(0, t + 2, 3)], floor.start(), clock.now);
    expect(floor.start().key?.id).toBe(3n);
  });

  it("recovers run_at to the microsecond from the claim's float milliseconds", () => {
    // The SQL sends (extract(epoch FROM run_at) * 1000)::float8: the nearest double to the exact milliseconds.
    for (const us of [t, t + 1, t + 999_999, 4_102_444_800_000_001, 946_684_800_000_007]) {
      expect(keyOf({ ...row(0, 0, 1), run_at_ms: Number(`${Math.floor(us / 1000)}.${String(us % 1000).padStart(3, "0")}`) }).runAtUs).toBe(us);
    }
  });

  it("orders keys as the ready index does: priority descending, then run_at, then id", () => {
    const key = (priority: number, runAtUs: number, id: bigint) => ({ priority, runAtUs, id });
    expect(before(key(1, t + 9, 9n), key(0, t, 1n))).toBe(true);
    expect(before(key(0, t, 9n), key(0, t + 1, 1n))).toBe(true);
    expect(before(key(0, t, 1n), key(0, t, 2n))).toBe(true);
    expect(before(key(0, t, 2n), key(0, t, 2n))).toBe(false);
  });
});
