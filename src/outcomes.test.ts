import { describe, expect, it } from "vitest";
import { ValidationError } from "./errors.js";
import { isSnooze, snooze } from "./outcomes.js";

describe("snooze", () => {
  it("is a value a handler returns, carrying its delay", () => {
    const outcome = snooze(60_000);
    expect(isSnooze(outcome)).toBe(true);
    expect(outcome.delayMs).toBe(60_000);
    expect(isSnooze({ delayMs: 60_000 })).toBe(false);
  });

  it("refuses a delay that is not a number of milliseconds ≥ 0 with a ValidationError naming delayMs", () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, "60" as unknown as number]) {
      let error: unknown;
      try {
        snooze(bad);
      } catch (e) {
        error = e;
      }
      expect(error, String(bad)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe("delayMs");
      expect((error as ValidationError).code).toBe("invalid_argument");
    }
  });
});
