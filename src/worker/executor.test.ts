import { describe, expect, it } from "vitest";
import { PermanentError, permanent } from "../errors.js";
import { defaultRetryPolicy } from "../defaults.js";
import { nastyThrownValues } from "../../test/support/thrown.js";
import { type ClaimedJob, type RunWrites, describeError, execute, maxErrorLength } from "./executor.js";

/** These handlers never checkpoint or complete in a transaction. */
const writes: RunWrites = { checkpoint: () => Promise.reject(new Error("unused")), complete: () => Promise.reject(new Error("unused")) };

const job: ClaimedJob = { id: "1", kind: "k", payload: {}, attempt: 1, maxAttempts: 8, retry: null, runAt: new Date(0), createdAt: new Date(0) };

describe("describeError", () => {
  for (const [name, make] of Object.entries(nastyThrownValues())) {
    it(`never throws: ${name}`, () => {
      const text = describeError(make());
      expect(typeof text).toBe("string");
      expect(text.length).toBeGreaterThan(0);
      expect(text.length).toBeLessThanOrEqual(maxErrorLength);
    });
  }

  it("keeps message, stack and cause of ordinary errors", () => {
    const text = describeError(new Error("outer", { cause: new Error("inner") }));
    expect(text).toMatch(/^Error: outer\n\s+at /);
    expect(text).toMatch(/\nCaused by: Error: inner\n\s+at /);
    expect(describeError(Object.assign(new Error("x"), { message: Symbol("m") }))).toMatch(/^Error: Symbol\(m\)/);
    expect(describeError({ code: 42 })).toBe('thrown value: {"code":42}');
    expect(describeError(permanent(new Error("bad input")))).not.toContain("Caused by");
  });
});

describe("execute", () => {
  for (const [name, make] of Object.entries(nastyThrownValues())) {
    it(`turns ${name} into a failure`, async () => {
      const outcome = await execute(job, {
          k: async () => {
            throw make();
          },
        }, { signal: new AbortController().signal }, defaultRetryPolicy, writes);
      expect(outcome).toMatchObject({ type: "failed", permanent: false });
      expect(outcome.type === "failed" && Number.isFinite(outcome.delayMs)).toBe(true);
    });
  }

  it("still recognises a permanent error", async () => {
    const outcome = await execute(job, { k: () => Promise.reject(new PermanentError("no")) }, { signal: new AbortController().signal }, defaultRetryPolicy, writes);
    expect(outcome).toMatchObject({ type: "failed", permanent: true });
  });
});
