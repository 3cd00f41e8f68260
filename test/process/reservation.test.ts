import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

describe("jobs claimed ahead when the worker loses the database past their lease", () => {
  it("come back unspent and run once, even with max_attempts 1", { timeout: 60_000 }, async () => {
    // Every lease extension loses its connection: a partition between this worker and the
    // database as far as heartbeats go. Claims, starts and outcomes go through.
    await t.dropHeartbeats();
    const { id: long } = await t.errand.enqueue("polite", { ms: 30_000 }, { maxAttempts: 1, priority: 1 });
    const buffered = await t.errand.enqueueMany(Array.from({ length: 4 }, () => ({ kind: "record", payload: { ms: 0 }, maxAttempts: 1 })));
    const worker = t.worker("w", ["--concurrency", "1", "--prefetch", "4", "--lease", "2", "--rescue-interval", "0.2", "--poll-interval", "0.2"]);

    await eventually(async () => (await Promise.all(buffered.map((j) => t.job(j.id)))).every((j) => j.status === "done"), 30_000, "the buffered jobs to be done");
    for (const { id } of buffered) {
      const job = await t.job(id);
      expect(job).toMatchObject({ status: "done", attempts: 1 });
      expect(job.errors).toEqual([expect.objectContaining({ attempt: 1, started: false, error: expect.stringMatching(/^lease expired before the job started/) })]);
      expect((await t.effects(id)).map((e) => e.attempt)).toEqual([1]);
    }
    // The job that did run on its only attempt is buried, as before.
    await eventually(async () => (await t.job(long)).status === "dead", 10_000, "the long job to be dead");
    expect((await t.job(long)).last_error).toMatch(/^lease expired on attempt 1 of 1 /);
    expect(worker.logs.some((l) => l.event === "lease_lost")).toBe(true);
  });
});

describe("jobs claimed ahead by a worker that is SIGKILLed", () => {
  it("come back unspent once its row is a minute old, long before their lease; its running job keeps its lease", { timeout: 60_000 }, async () => {
    const { id: long } = await t.errand.enqueue("polite", { ms: 60_000 }, { priority: 1 });
    const buffered = await t.errand.enqueueMany(Array.from({ length: 4 }, () => ({ kind: "record", payload: { ms: 0 } })));
    // The default lease (5 minutes); no rescuer of its own.
    const worker = t.worker("w", ["--concurrency", "1", "--prefetch", "4", "--rescue-interval", "0"]);
    await t.started(long, worker);
    await eventually(async () => (await t.statusCounts()).running === 5, 10_000, "the long job running and four reserved");
    worker.child.kill("SIGKILL");
    await worker.exited;

    // A minute later (SQL time travel on the dead worker's row alone), a rescuer returns the four.
    const rescuer = t.errand.rescuer();
    expect(await rescuer.runOnce()).toEqual({ ready: 0, dead: 0 });
    await t.sql(`UPDATE ${t.schema}.workers SET seen_at = seen_at - interval '61 seconds', started_at = started_at - interval '61 seconds'`);
    expect(await rescuer.runOnce()).toEqual({ ready: 4, dead: 0 });
    expect(await t.job(long)).toMatchObject({ status: "running", attempts: 1 });

    const next = t.worker("w2", ["--concurrency", "4", "--rescue-interval", "0"]);
    await eventually(async () => (await Promise.all(buffered.map((j) => t.job(j.id)))).every((j) => j.status === "done"), 30_000, "the four to be done");
    for (const { id } of buffered) {
      const job = await t.job(id);
      expect(job).toMatchObject({ status: "done", attempts: 1 });
      expect(job.errors).toEqual([expect.objectContaining({ attempt: 1, started: false, error: expect.stringMatching(/held the job reserved and showed no sign of life for 60 s/) })]);
      expect((await t.effects(id)).map((e) => [e.worker, e.attempt])).toEqual([["w2", 1]]);
    }
    // The job that was running is not run again while its lease holds.
    expect((await t.effects(long)).length).toBe(1);
    expect(await t.job(long)).toMatchObject({ status: "running", attempts: 1 });
    next.child.kill("SIGTERM");
    expect(await next.exited).toEqual({ code: 0, signal: null });
  });
});

describe("a handler that throws values that cannot be described naively", () => {
  it("fails only its own job; the worker process stays up and exits cleanly", { timeout: 60_000 }, async () => {
    const weird = await t.errand.enqueueMany(["symbol-message", "throwing-object", "proxy", "revoked"].map((how) => ({ kind: "weird", payload: { how } })));
    const fine = await t.errand.enqueueMany(Array.from({ length: 10 }, () => ({ kind: "record", payload: { ms: 50 } })));
    const worker = t.worker("w", ["--concurrency", "4"]);
    await eventually(
      async () => {
        if (worker.hasExited()) throw new Error(`the worker exited: ${JSON.stringify(await worker.exited)} ${worker.stderr().slice(-2000)}`);
        const jobs = await Promise.all([...weird, ...fine].map((j) => t.job(j.id)));
        return jobs.every((j) => j.status !== "running" && j.attempts === 1);
      },
      30_000,
      "every job to have run once",
    );
    for (const { id } of weird) expect(await t.job(id)).toMatchObject({ status: "ready", attempts: 1, last_error: expect.any(String) });
    for (const { id } of fine) expect((await t.job(id)).status).toBe("done");
    expect(worker.hasExited()).toBe(false);
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toEqual({ code: 0, signal: null });
  });
});
