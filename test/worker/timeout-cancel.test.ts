import { describe, expect, it } from "vitest";
import { ErrandError, NotFoundError, ValidationError } from "../../src/index.js";
import { resolveKinds } from "../../src/options.js";
import { eventually, useTestErrand } from "../support/db.js";

const t = useTestErrand();

const status = async (id: string) => (await t.sql<{ status: string; last_error: string | null }>(`SELECT status, last_error FROM ${t.schema}.all_jobs WHERE id = $1`, [id]))[0]!;
const counts = async () =>
  (await t.sql<{ timed_out: string; cancelled: string; failed: string }>(
    `SELECT coalesce(sum(timed_out), 0)::text AS timed_out, coalesce(sum(cancelled), 0)::text AS cancelled, coalesce(sum(failed), 0)::text AS failed FROM ${t.schema}.outcome_counts`,
  ))[0]!;

describe("maximum run time", () => {
  it("refuses a timeout of 0, a negative or a fractional one, naming the field, and writes nothing", async () => {
    for (const bad of [0, -5, 1.5]) {
      await expect(t.errand.enqueue("k", {}, { timeoutMs: bad })).rejects.toThrow(ValidationError);
      await expect(t.errand.enqueue("k", {}, { timeoutMs: bad })).rejects.toThrow(/timeoutMs/);
      await expect(t.errand.enqueueMany([{ kind: "k" }, { kind: "k", timeoutMs: bad }])).rejects.toThrow(/jobs\[1\]\.timeoutMs/);
    }
    expect(await t.sql(`SELECT id FROM ${t.schema}.all_jobs`)).toEqual([]);
  });

  it("fires the signal with a timeout reason, fails the attempt and counts it; a late result is ignored", async () => {
    let late: (() => void) | undefined;
    let reason: unknown;
    const { id } = await t.errand.enqueue("hang", {}, { timeoutMs: 100, maxAttempts: 1 });
    const worker = t.errand.worker({
      concurrency: 1,
      handlers: {
        hang: (_payload, ctx) =>
          new Promise<void>((resolve) => {
            ctx.signal.addEventListener("abort", () => (reason = ctx.signal.reason));
            late = resolve; // ignores its signal
          }),
      },
    });
    await worker.start();
    try {
      await eventually(async () => (await status(id)).status === "dead", 10_000, "the timed-out job to be dead");
      expect(reason).toBeInstanceOf(ErrandError);
      expect((reason as ErrandError).code).toBe("timeout");
      expect((await status(id)).last_error).toBe("timed out after 100 ms");
      expect(worker.activeCount).toBe(0); // the slot is free although the handler never settled
      late!(); // the late success is not written
      const { id: next } = await t.errand.enqueue("hang", {}, { timeoutMs: 60_000 });
      await eventually(() => late !== undefined && worker.activeCount === 1, 10_000, "the next job to run in the freed slot");
      expect((await status(id)).status).toBe("dead");
      expect(await counts()).toMatchObject({ timed_out: "1", failed: "1" });
      expect((await t.errand.stats()).total.lastMinute).toMatchObject({ timedOut: 1, failed: 1, cancelled: 0 });
      await t.errand.cancel({ ids: [next] });
    } finally {
      await worker.stop({ timeout: 0 });
    }
  });

  it("refuses a kind's bad timeoutMs where it is written, naming it", () => {
    expect(() => resolveKinds({ k: { timeoutMs: 0 } })).toThrow(/kinds\.k\.timeoutMs/);
    expect(resolveKinds({ k: { timeoutMs: 250 } }).get("k")?.timeoutMs).toBe(250);
  });
});

describe("cancel", () => {
  it("cancels a ready or scheduled job, which never runs, and counts it", async () => {
    const { id: ready } = await t.errand.enqueue("k", {});
    const { id: later } = await t.errand.enqueue("k", {}, { delay: 60_000 });
    expect((await t.errand.cancel({ ids: [ready, later] })).sort()).toEqual([ready, later].sort());
    await t.sql(`UPDATE ${t.schema}.jobs SET run_at = now()`);
    const worker = t.errand.worker({ handlers: { k: () => {} } });
    expect(await worker.runOnce()).toBe(0);
    expect(await status(ready)).toMatchObject({ status: "cancelled" });
    expect((await t.errand.getJob(later))?.status).toBe("cancelled");
    expect(await counts()).toMatchObject({ cancelled: "2" });
    expect((await t.errand.stats()).kinds.k?.lastHour).toMatchObject({ cancelled: 2, timedOut: 0 });
  });

  it("wakes waitFor: a waiter on a job that is cancelled gets it back, cancelled", async () => {
    const { id } = await t.errand.enqueue("k", {}, { delay: 60_000 });
    const waited = t.errand.waitFor(id, { timeoutMs: 20_000 });
    // Whether the cancel lands before waitFor's first read (which must count cancelled as
    // finished) or after it (which the cancel's notice must wake), the waiter gets the job.
    await t.errand.cancel({ ids: [id] });
    expect((await waited).status).toBe("cancelled");
  });

  it("is all or nothing: an unknown id or a finished job is a clear error and nothing changes", async () => {
    const { id: ready } = await t.errand.enqueue("k", {});
    const { id: done } = await t.errand.enqueue("other", {});
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'done', finished_at = now() WHERE id = $1`, [done]);
    await expect(t.errand.cancel({ ids: [ready, "999999"] })).rejects.toThrow(NotFoundError);
    await expect(t.errand.cancel({ ids: [ready, "999999"] })).rejects.toThrow(/999999/);
    const finished = await t.errand.cancel({ ids: [ready, done] }).catch((error: unknown) => error);
    expect(finished).toBeInstanceOf(ErrandError);
    expect((finished as ErrandError).code).toBe("job_finished");
    expect((finished as ErrandError).message).toContain(`job ${done} (done)`);
    expect(await status(ready)).toMatchObject({ status: "ready" });
    await expect(t.errand.cancel({ ids: [] })).rejects.toThrow(ValidationError);
    await expect(t.errand.cancel({ ids: ["x"] })).rejects.toThrow(ValidationError);
    expect(await counts()).toMatchObject({ cancelled: "0" });
  });

  it("by kind cancels that kind's ready and running jobs only", async () => {
    const a = await t.errand.enqueueMany([{ kind: "a" }, { kind: "a" }]);
    const { id: b } = await t.errand.enqueue("b", {});
    expect((await t.errand.cancel({ kind: "a" })).sort()).toEqual(a.map((j) => j.id).sort());
    expect(await status(b)).toMatchObject({ status: "ready" });
  });

  it("aborts a running job's handler with a cancel reason; it ends cancelled, is not retried, and its slot is freed", async () => {
    const { id } = await t.errand.enqueue("hang", {});
    let reason: unknown;
    const worker = t.errand.worker({
      concurrency: 1,
      handlers: {
        hang: (_payload, ctx) =>
          new Promise<void>(() => {
            ctx.signal.addEventListener("abort", () => (reason = ctx.signal.reason)); // and never settles
          }),
      },
    });
    await worker.start();
    try {
      await eventually(() => worker.activeCount === 1, 10_000, "the job to run");
      expect(await t.errand.cancel({ ids: [id] })).toEqual([id]);
      await eventually(() => reason !== undefined, 10_000, "the handler's signal to fire");
      expect((reason as ErrandError).code).toBe("cancelled");
      await eventually(() => worker.activeCount === 0, 10_000, "the slot to be freed");
      const job = await t.errand.getJob(id);
      expect(job).toMatchObject({ status: "cancelled", attempts: 1, lockedBy: null });
      await expect(t.errand.cancel({ ids: [id] })).rejects.toThrow(/already finished/);
    } finally {
      await worker.stop({ timeout: 0 });
    }
  });
});
