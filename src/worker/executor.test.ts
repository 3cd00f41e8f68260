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

  it("gives the handler a context whose values and functions work when read off it (destructured), made once per job", async () => {
    const checkpoints: unknown[] = [];
    const reports: string[] = [];
    const recording: RunWrites = { checkpoint: async (_job, state) => void checkpoints.push(state), complete: () => Promise.reject(new Error("unused")) };
    const results = { maxResultBytes: 1000, progress: (_job: ClaimedJob, json: string) => void reports.push(json) };
    const controller = new AbortController();
    let seen: unknown;
    const outcome = await execute({ ...job, id: "7", lastCheckpoint: { step: 1 } }, {
      k: async (_payload, ctx) => {
        // Handlers do take the functions off the context; that must keep working.
        // eslint-disable-next-line @typescript-eslint/unbound-method
        const { id, kind, attempt, maxAttempts, idempotencyKey, lastCheckpoint, signal, checkpoint, progress } = ctx;
        seen = { id, kind, attempt, maxAttempts, idempotencyKey, lastCheckpoint, signal, same: ctx.checkpoint === checkpoint && ctx.progress === progress };
        await checkpoint({ step: 2 });
        progress(50);
      },
    }, controller, defaultRetryPolicy, recording, Math.random, results);
    expect(outcome).toEqual({ type: "done" });
    expect(seen).toEqual({ id: "7", kind: "k", attempt: 1, maxAttempts: 8, idempotencyKey: "errand-job-7", lastCheckpoint: { step: 1 }, signal: controller.signal, same: true });
    expect(checkpoints).toEqual([{ step: 2 }]);
    expect(reports).toEqual(["50"]);
  });
});
