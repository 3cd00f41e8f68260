import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

const ARGS = ["--concurrency", "1", "--poll-interval", "0.2"];

describe("in a worker process", () => {
  it("a handler that ignores its signal past timeoutMs fails the attempt, is retried, and frees its slot", { timeout: 60_000 }, async () => {
    const { id } = await t.errand.enqueue("stubborn", {}, { timeoutMs: 300, maxAttempts: 2, retry: { baseDelayMs: 100 } });
    const { id: after } = await t.errand.enqueue("record", { ms: 0 }, { priority: -1 });
    const worker = t.worker("w", ARGS);
    await eventually(async () => (await t.job(id)).status === "dead", 30_000, "the stubborn job to time out twice");
    const job = await t.job(id);
    expect(job.last_error).toBe("timed out after 300 ms");
    expect(job.errors.map((e) => e.error)).toEqual(["timed out after 300 ms", "timed out after 300 ms"]);
    expect((await t.effects(id)).map((e) => e.note)).toEqual(["abort seen, ignored", "abort seen, ignored"]);
    // One slot, held by a handler that never settles: the next job runs only because it was freed.
    await eventually(async () => (await t.job(after)).status === "done", 30_000, "the next job to run");
    expect(worker.hasExited()).toBe(false);
  });

  it("cancelling a running job from another process aborts its handler; it ends cancelled, not retried", { timeout: 60_000 }, async () => {
    const { id } = await t.errand.enqueue("polite", { ms: 60_000 });
    const worker = t.worker("w", ARGS);
    await t.started(id, worker);
    expect(await t.errand.cancel({ ids: [id] })).toEqual([id]);
    const effect = await eventually(async () => (await t.effects(id)).find((e) => e.ended_at !== null), 10_000, "the handler to stop");
    expect(effect?.note).toBe(`aborted: job ${id} was cancelled`);
    const job = await t.job(id);
    expect(job).toMatchObject({ status: "cancelled", attempts: 1 });
    const { id: next } = await t.errand.enqueue("record", { ms: 0 });
    await eventually(async () => (await t.job(next)).status === "done", 20_000, "the worker to go on");
    expect(await t.effects(id)).toHaveLength(1);
  });
});
