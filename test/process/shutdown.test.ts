import { performance } from "node:perf_hooks";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

describe("graceful shutdown of `errand worker`", () => {
  it("on SIGTERM lets the running job finish, gives back the buffered one, and exits 0 right after", async () => {
    const [long, buffered, waiting] = await t.errand.enqueueMany([
      { kind: "record", payload: { ms: 1500 } },
      { kind: "record", payload: { ms: 0 } },
      { kind: "record", payload: { ms: 0 } },
    ]);
    const worker = t.worker("w", ["--concurrency", "1", "--prefetch", "1", "--shutdown-timeout", "60"]);
    await t.started(long!.id, worker);
    // The worker holds the second job in its buffer (leased, not started).
    await eventually(async () => (await t.job(buffered!.id)).status === "running", 5_000, "the second job to be buffered");
    const sent = performance.now();
    worker.child.kill("SIGTERM");
    const exit = await worker.exited;
    const tookMs = performance.now() - sent;
    expect(exit).toEqual({ code: 0, signal: null });
    // It waited for the job (≈1.5 s), and not for the 60 s timeout: a bound far from both,
    // so a slow machine does not change the verdict.
    expect(tookMs).toBeLessThan(30_000);
    expect(await t.job(long!.id)).toMatchObject({ status: "done", attempts: 1, last_error: null });
    expect(await t.job(buffered!.id)).toMatchObject({ status: "ready", attempts: 0 });
    expect(await t.job(waiting!.id)).toMatchObject({ status: "ready", attempts: 0 });
    const effects = await t.effects();
    expect(effects.map((e) => [e.job_id, e.ended_at !== null])).toEqual([[long!.id, true]]);
    expect(worker.logs.find((l) => l.event === "stopped")).toMatchObject({ released: 1 });
  });

  it("aborts a handler that ignores the deadline and returns its job to ready without spending the attempt", async () => {
    const { id } = await t.errand.enqueue("stubborn", {});
    const worker = t.worker("w", ["--shutdown-timeout", "1"]);
    await t.started(id, worker);
    expect(await t.job(id)).toMatchObject({ status: "running", attempts: 1 });
    const sent = performance.now();
    worker.child.kill("SIGTERM");
    const exit = await worker.exited;
    const tookMs = performance.now() - sent;
    expect(exit).toEqual({ code: 0, signal: null });
    // It gave the handler its second, then aborted it; exit 0 means it did not wait for
    // the last-resort exit (timeout + 10 s, exit 1).
    expect(tookMs).toBeGreaterThanOrEqual(950);
    expect(await t.job(id)).toMatchObject({ status: "ready", attempts: 0, last_error: null });
    expect(worker.logs.find((l) => l.event === "stopped")).toMatchObject({ released: 1 });
  });

  it("exits at once on a second SIGINT, leaving the job leased until its lease expires", async () => {
    const { id } = await t.errand.enqueue("stubborn", {});
    const worker = t.worker("w", ["--shutdown-timeout", "60"]);
    await t.started(id, worker);
    worker.child.kill("SIGINT");
    await worker.waitForLog((l) => l.event === "shutting_down", 15_000, "shutting_down");
    const sent = performance.now();
    worker.child.kill("SIGINT");
    const exit = await worker.exited;
    expect(exit.code).toBe(130);
    expect(performance.now() - sent).toBeLessThan(30_000); // not the 60 s a graceful stop would wait
    expect(worker.logs.some((l) => l.event === "forced_exit")).toBe(true);
    expect(await t.job(id)).toMatchObject({ status: "running", attempts: 1 });
  });
});
