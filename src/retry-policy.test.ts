import { describe, expect, it } from "vitest";
import { defaultMaxAttempts, defaultRetryPolicy } from "./defaults.js";
import { resolveRetryPolicy, retryDelay } from "./retry-policy.js";

describe("retryDelay", () => {
  // The default policy's waits in seconds: failure #, wait, cumulative (before jitter).
  const defaultTable: [number, number, number][] = [
    [1, 30, 30],
    [2, 60, 90],
    [3, 120, 210],
    [4, 240, 450],
    [5, 480, 930],
    [6, 960, 1890],
    [7, 1920, 3810],
  ];

  it("waits 30 s, doubling, 3,810 s in all before the 8th attempt (random = 1, no jitter)", () => {
    let cumulative = 0;
    for (const [failure, wait, total] of defaultTable) {
      const delay = retryDelay(failure, defaultRetryPolicy, () => 1) / 1000;
      cumulative += delay;
      expect(delay).toBe(wait);
      expect(cumulative).toBe(total);
    }
  });

  it("stays within ×0.5–1.0 jitter of those waits", () => {
    for (const [failure, wait] of defaultTable) {
      for (let i = 0; i < 200; i++) {
        const delay = retryDelay(failure) / 1000;
        expect(delay).toBeGreaterThanOrEqual(wait * 0.5);
        expect(delay).toBeLessThanOrEqual(wait);
      }
    }
  });

  it("rides out a 20-minute outage with 8 attempts even at minimum jitter, but not with 5", () => {
    const lastAttemptAt = (maxAttempts: number, random: () => number) =>
      Array.from({ length: maxAttempts - 1 }, (_, i) => retryDelay(i + 1, defaultRetryPolicy, random)).reduce((a, b) => a + b, 0) / 1000;
    expect(defaultMaxAttempts).toBe(8);
    expect(lastAttemptAt(8, () => 1)).toBe(3810); // ≈ 63.5 minutes
    expect(lastAttemptAt(8, () => 0)).toBe(1905); // ≈ 31.75 minutes > 20
    expect(lastAttemptAt(5, () => 1)).toBe(450); // 7.5 minutes: the outage is still on
  });

  it("caps every wait at one hour", () => {
    expect(retryDelay(20, defaultRetryPolicy, () => 1)).toBe(3_600_000);
    expect(retryDelay(200, defaultRetryPolicy, () => 0)).toBe(1_800_000);
  });

  it("applies a custom policy and rejects bad fields by name", () => {
    const policy = resolveRetryPolicy({ baseDelayMs: 1000, factor: 3, jitter: 0 }, "retry");
    expect([1, 2, 3].map((n) => retryDelay(n, policy))).toEqual([1000, 3000, 9000]);
    expect(() => resolveRetryPolicy({ jitter: 2 }, "kinds.email.retry")).toThrow("kinds.email.retry.jitter: must be between 0 and 1");
    expect(() => resolveRetryPolicy({ base: 1 } as never, "retry")).toThrow(/retry\.base: unknown option/);
  });
});
