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
    floor.claimed([row(0, t + 5, 9), row(5, t + 9, 12), row(0, t + 5, 7), row(0, t + 1, 30)], first, clock.now, 100);
    expect(floor.start().key).toEqual({ priority: 0, runAtUs: t + 5, id: 9n });
  });

  it("keeps its key through an empty claim and never moves back", () => {
    const { floor, clock } = floorAt();
    floor.claimed([row(0, t, 4)], floor.start(), clock.now, 100);
    const from = floor.start();
    floor.claimed([], from, clock.now, 100);
    expect(floor.start().key).toEqual({ priority: 0, runAtUs: t, id: 4n });
    // A row the slack found below the key (a job of a transaction that committed late).
    floor.claimed([row(0, t - 50_000, 99)], floor.start(), clock.now, 100);
    expect(floor.start().key?.id).toBe(4n);
  });

  it("sends a probe one poll interval after the last look from the start; a claim goes on from the floor meanwhile", () => {
    const { floor, clock } = floorAt();
    expect(floor.probeDue()).toBe(false); // no floor: claims are from the start
    floor.claimed([row(0, t, 1)], floor.start(), clock.now, 100);
    clock.now += pollMs - 1;
    floor.claimed([row(0, t + 1, 2)], floor.start(), clock.now, 100);
    expect(floor.probeDue()).toBe(false);
    clock.now += 1;
    expect(floor.probeDue()).toBe(true);
    const probe = floor.probing();
    expect(floor.probeDue()).toBe(false); // one out at a time
    const during = floor.start();
    expect(during.key?.id).toBe(2n);
    // The probe finds a job given back below the floor: the floor goes down to it, and a
    // claim that was out meanwhile does not raise it again.
    expect(floor.probed({ priority: 0, runAtUs: t - 10, id: 3n }, probe)).toBe(true);
    floor.claimed([row(0, t + 2, 4)], during, clock.now, 100);
    expect(floor.start().key?.id).toBe(3n);
    clock.now += pollMs - 1;
    expect(floor.probeDue()).toBe(false);
    clock.now += 1;
    // A probe that finds nothing below the floor leaves it where it is.
    expect(floor.probed({ priority: 0, runAtUs: t + 5, id: 5n }, floor.probing())).toBe(false);
    expect(floor.probed(undefined, floor.probing())).toBe(false);
    expect(floor.start().key?.id).toBe(3n);
  });

  it(`goes ${fromStartShare} times as long as a slow probe took without one, at most ${maxPollIntervals} poll intervals`, () => {
    const { floor, clock } = floorAt();
    floor.claimed([row(0, t, 1)], floor.start(), clock.now, 100);
    /** A probe that takes `ms`; returns when it was sent. */
    const slowProbe = (ms: number) => {
      clock.now += pollMs;
      expect(floor.probeDue()).toBe(true);
      const probe = floor.probing();
      clock.now += ms;
      floor.probed(undefined, probe);
      return probe.sentAt;
    };
    const sent = slowProbe(150);
    clock.now = sent + fromStartShare * 150 - 1;
    expect(floor.probeDue()).toBe(false);
    clock.now += 1;
    expect(floor.probeDue()).toBe(true);
    const later = slowProbe(60_000);
    clock.now = later + maxPollIntervals * pollMs - 1;
    expect(floor.probeDue()).toBe(false);
    clock.now += 1;
    // A fast probe brings it back to one poll interval.
    const fast = slowProbe(1);
    clock.now = fast + pollMs;
    expect(floor.probeDue()).toBe(true);
  });

  it("a failed probe is sent again by the next claim", () => {
    const { floor, clock } = floorAt();
    floor.claimed([row(0, t, 1)], floor.start(), clock.now, 100);
    clock.now += pollMs;
    expect(floor.probed(undefined, floor.probing(), true)).toBe(false);
    expect(floor.probeDue()).toBe(true);
  });

  it("a drop asks for a probe at once, and again when a probe was out at the drop", () => {
    const { floor, clock } = floorAt();
    floor.claimed([row(0, t, 1)], floor.start(), clock.now, 100);
    expect(floor.probeDue()).toBe(false);
    floor.drop();
    expect(floor.probeDue()).toBe(true);
    const probe = floor.probing();
    floor.drop();
    floor.probed(undefined, probe);
    expect(floor.probeDue()).toBe(true);
    floor.probed(undefined, floor.probing());
    expect(floor.probeDue()).toBe(false);
    // The floor stays through drops: claims go on from it until a probe lowers it.
    expect(floor.start().key?.id).toBe(1n);
  });

  it("moves down to the start of a transaction that inserted jobs below it, and a claim out meanwhile does not raise it", () => {
    const { floor, clock } = floorAt();
    floor.since(t - 1_000); // no floor yet: claims are from the start
    expect(floor.start().key).toBeUndefined();
    floor.claimed([row(2, t, 1)], floor.start(), clock.now, 100);
    floor.since(t); // began at the floor's run_at: the claim's own key order reads it
    floor.since(t + 500);
    expect(floor.start().key).toEqual({ priority: 2, runAtUs: t, id: 1n });
    const during = floor.start();
    floor.since(t - 300_000);
    expect(floor.start().key).toEqual({ priority: 2, runAtUs: t - 300_000, id: 0n });
    floor.claimed([row(2, t + 10, 2)], during, clock.now, 100);
    expect(floor.start().key?.runAtUs).toBe(t - 300_000);
    floor.since(t - 200_000); // above the lowered floor: nothing to do
    expect(floor.start().key?.runAtUs).toBe(t - 300_000);
    // The next claim, from there, moves it up again; no probe was asked for.
    floor.claimed([row(2, t - 300_000, 3), row(2, t + 20, 4)], floor.start(), clock.now, 100);
    expect(floor.start().key).toEqual({ priority: 2, runAtUs: t + 20, id: 4n });
    expect(floor.probeDue()).toBe(false);
    // More than a poll interval below: the claims would read all that, so a probe goes at once instead.
    floor.since(t + 20 - pollMs * 1000 - 1);
    expect(floor.start().key?.runAtUs).toBe(t + 20);
    expect(floor.probeDue()).toBe(true);
  });

  it("starts claims where the other workers' left off, except from a lowered floor until a claim from it comes back short", () => {
    const { floor, clock } = floorAt();
    expect(floor.start().shared).toBe(true);
    floor.claimed([row(0, t, 1)], floor.start(), clock.now, 100);
    expect(floor.start()).toMatchObject({ key: { id: 1n }, shared: true });
    // A probe finds a job below the floor: claims start from it alone.
    clock.now += pollMs;
    expect(floor.probed({ priority: 0, runAtUs: t - 10, id: 0n }, floor.probing())).toBe(true);
    const lowered = floor.start();
    expect(lowered).toMatchObject({ key: { id: 0n }, shared: false });
    // A full claim from there may have left more behind it: still alone.
    floor.claimed(Array.from({ length: 3 }, (_, i) => row(0, t - 10 + i, 10 + i)), lowered, clock.now, 3);
    expect(floor.start()).toMatchObject({ key: { id: 12n }, shared: false });
    // A claim out when the floor was lowered again does not end it either.
    const during = floor.start();
    floor.since(t - 5_000);
    floor.claimed([], during, clock.now, 3);
    expect(floor.start()).toMatchObject({ key: { runAtUs: t - 5_000 }, shared: false });
    // A short one took all there was from the floor on: shared again.
    floor.claimed([row(0, t - 4_000, 20)], floor.start(), clock.now, 3);
    expect(floor.start()).toMatchObject({ key: { id: 20n }, shared: true });
    // A shared claim that found nothing leaves the floor below where the others left off:
    // the next claim reads from the floor alone, then they share again.
    floor.claimed([], floor.start(), clock.now, 3);
    const alone = floor.start();
    expect(alone).toMatchObject({ key: { id: 20n }, shared: false });
    floor.claimed([], alone, clock.now, 3);
    expect(floor.start().shared).toBe(true);
    // So does one that took only jobs of a higher priority, which come before the floor.
    floor.claimed([row(5, t, 30)], floor.start(), clock.now, 3);
    expect(floor.start()).toMatchObject({ key: { id: 20n }, shared: false });
  });

  it("after a drop, starts claims from the floor alone until one sent after the drop's probe came back", () => {
    const { floor, clock } = floorAt();
    floor.claimed([row(0, t, 1)], floor.start(), clock.now, 100);
    floor.drop();
    expect(floor.start().shared).toBe(false);
    const probe = floor.probing();
    const before = floor.start(); // out while the probe is
    // Nothing below the floor: the job given back lies after it.
    expect(floor.probed({ priority: 0, runAtUs: t + 5, id: 2n }, probe)).toBe(false);
    floor.claimed([row(0, t + 1, 3)], before, clock.now, 100);
    const after = floor.start();
    expect(after.shared).toBe(false); // the claim out before the probe returned may have missed it
    floor.claimed([row(0, t + 5, 2)], after, clock.now, 1);
    expect(floor.start().shared).toBe(true);
    // A drop whose probe finds the job below the floor lowers it: alone until a claim comes back short.
    floor.drop();
    expect(floor.probed({ priority: 0, runAtUs: t, id: 0n }, floor.probing())).toBe(true);
    floor.claimed([row(0, t, 9)], floor.start(), clock.now, 1);
    expect(floor.start().shared).toBe(false);
    floor.claimed([], floor.start(), clock.now, 1);
    expect(floor.start().shared).toBe(true);
  });

  it("starts from the hint, which counts as a look from the start; without one, from the start", () => {
    const hinted = floorAt();
    expect(hinted.floor.unset).toBe(true);
    hinted.floor.hint({ priority: 0, runAtUs: t, id: 7n }, hinted.clock.now);
    expect(hinted.floor.unset).toBe(false);
    expect(hinted.floor.start().key?.id).toBe(7n);
    expect(hinted.floor.probeDue()).toBe(false);
    hinted.clock.now += pollMs;
    expect(hinted.floor.probeDue()).toBe(true);

    const none = floorAt();
    none.floor.hint(undefined, none.clock.now);
    expect(none.floor.unset).toBe(false); // asked once: not again
    expect(none.floor.start().key).toBeUndefined();
    none.floor.claimed([row(0, t, 2)], none.floor.start(), none.clock.now, 100);
    expect(none.floor.start().key?.id).toBe(2n);
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
