import { afterEach, describe, expect, it, vi } from "vitest";
import { monotonicClock } from "./clock.js";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the monotonic clock (the worker's by default)", () => {
  it("reads as epoch milliseconds, and does not go back when the wall clock is set back", () => {
    const before = monotonicClock.now();
    expect(Math.abs(before - Date.now())).toBeLessThan(60_000);
    // The wall clock set back ten minutes (an NTP step): a lease copy measured on it would stretch.
    const wall = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(wall - 600_000);
    expect(monotonicClock.now()).toBeGreaterThanOrEqual(before);
  });
});
