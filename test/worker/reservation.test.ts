import { describe, expect, it } from "vitest";
import { maxUnstartedRefunds } from "../../src/sql/jobs.js";
import { eventually, expireLeases, useTestErrand } from "../support/db.js";

// An attempt is spent when a handler starts, not when a job is claimed ahead into a
// worker's buffer: jobs that never ran must not be buried.
const t = useTestErrand();

interface Row {
  id: string;
  status: string;
  attempts: number;
  started: boolean;
  last_error: string | null;
  errors: { attempt: number; error: string; started?: boolean }[];
}
const rows = () =>
  t.sql<Row>(`SELECT id::text, status, attempts, started_at IS NOT NULL AS started, last_error, errors FROM ${t.schema}.all_jobs j ORDER BY j.id`);
/** A handler that runs until its signal aborts it (a worker's stop with no timeout). */
const untilAborted = (_: unknown, ctx: { signal: AbortSignal }) => new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));

describe("jobs claimed ahead", () => {
  it("spend no attempt until they start, and come back unspent when their lease expires", async () => {
    const jobs = await t.errand.enqueueMany(Array.from({ length: 5 }, (_, i) => ({ kind: i === 0 ? "slow" : "quick", payload: {}, maxAttempts: 1 })));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const ran: string[] = [];
    const first = t.errand.worker({ concurrency: 1, prefetch: 4, rescueIntervalMs: 0, handlers: { slow: () => gate, quick: async () => {} } });
    await first.start();
    await eventually(async () => (await rows()).every((r) => r.status === "running"), 10_000, "one job running and four buffered");
    const held = await rows();
    expect(held.map((r) => [r.attempts, r.started])).toEqual([[1, true], ...Array.from({ length: 4 }, () => [0, false])]);

    // The worker loses the database for longer than the lease: its leases run out.
    await expireLeases(t);
    const rescuer = t.errand.worker({ handlers: { quick: async (_: unknown, ctx) => void ran.push(ctx.id) } });
    expect(await rescuer.rescue()).toEqual({ ready: 4, dead: 1 });
    const after = await rows();
    expect(after[0]).toMatchObject({ status: "dead", attempts: 1 });
    expect(after[0]!.last_error).toMatch(/^lease expired on attempt 1 of 1 /);
    for (const r of after.slice(1)) {
      expect(r).toMatchObject({ status: "ready", attempts: 0 });
      expect(r.errors).toEqual([expect.objectContaining({ attempt: 1, started: false, error: expect.stringMatching(/^lease expired before the job started/) })]);
    }
    // (Stopping first: this worker must not start its buffer, which it no longer holds.)
    const stopping = first.stop({ timeout: 10_000 });
    release();
    await stopping;

    // They run once, on their one attempt.
    while ((await rescuer.runOnce()) > 0);
    expect(ran.sort()).toEqual(jobs.slice(1).map((j) => j.id).sort());
    expect((await rows()).slice(1).map((r) => [r.status, r.attempts])).toEqual(Array.from({ length: 4 }, () => ["done", 1]));
  });

  it("spend their attempt once their handler has started, written while it runs", async () => {
    const [quick, slow] = await t.errand.enqueueMany([
      { kind: "quick", payload: {} },
      { kind: "slow", payload: {}, maxAttempts: 1 },
    ]);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = false;
    const worker = t.errand.worker({
      concurrency: 1,
      prefetch: 1,
      rescueIntervalMs: 0,
      handlers: { quick: async () => {}, slow: () => ((started = true), gate) },
    });
    await worker.start();
    await eventually(() => started, 10_000, "the buffered job to start");
    // The quick job's outcome and the slow one's start go out in separate statements, either first.
    await eventually(
      async () => (await t.errand.getJob(slow!.id))!.attempts === 1 && (await t.errand.getJob(quick!.id))!.status === "done",
      5_000,
      "its start and the quick job's outcome to be written",
    );
    expect((await t.errand.getJob(slow!.id))!).toMatchObject({ status: "running", attempts: 1 });
    expect((await t.errand.getJob(slow!.id))!.startedAt).not.toBeNull();

    // A started job whose lease expires is charged as always.
    await expireLeases(t);
    expect(await t.errand.worker({ handlers: {} }).rescue()).toEqual({ ready: 0, dead: 1 });
    release();
    await worker.stop();
    expect((await t.errand.getJob(slow!.id))!).toMatchObject({ status: "dead", attempts: 1 });
  });

  it(`are refunded at most ${maxUnstartedRefunds} times, so a job that kills its worker before its start is written is still buried`, async () => {
    const { id } = await t.errand.enqueue("k", {}, { maxAttempts: 1 });
    const rescuer = t.errand.worker({ handlers: {} });
    /** What a worker that died right after claiming it ahead leaves behind. */
    const reserveAndExpire = async () => {
      await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', started_at = NULL, locked_by = 'gone', locked_until = now() WHERE id = $1`, [id]);
      await expireLeases(t, [id]);
    };
    for (let i = 1; i <= maxUnstartedRefunds; i++) {
      await reserveAndExpire();
      expect(await rescuer.rescue()).toEqual({ ready: 1, dead: 0 });
      expect((await rows())[0]).toMatchObject({ status: "ready", attempts: 0 });
    }
    await reserveAndExpire();
    expect(await rescuer.rescue()).toEqual({ ready: 0, dead: 1 });
    const [dead] = await rows();
    expect(dead).toMatchObject({ status: "dead", attempts: 1 });
    expect(dead!.last_error).toMatch(/^lease expired on attempt 1 of 1 \(worker gone died or overran its lease\)$/);
    expect(dead!.errors.map((e) => e.started ?? true)).toEqual([...Array.from({ length: maxUnstartedRefunds }, () => false), true]);
  });

  it("are the last of a claim's batch in claim order (priority, then run_at, then id): the first ones start", async () => {
    const earlier = new Date(Date.now() - 60_000).toISOString();
    const jobs = await t.errand.enqueueMany([
      { kind: "slow", payload: {} },
      { kind: "slow", payload: {}, priority: 3 },
      { kind: "slow", payload: {} },
      { kind: "slow", payload: {}, priority: 3 },
      { kind: "slow", payload: {}, priority: 1 },
      { kind: "slow", payload: {}, runAt: earlier },
    ]);
    const worker = t.errand.worker({
      concurrency: 4,
      prefetch: 2,
      handlers: { slow: untilAborted },
    });
    await worker.start();
    await eventually(async () => (await rows()).every((r) => r.status === "running"), 10_000, "four running, two buffered");
    const started = (await rows()).filter((r) => r.started).map((r) => r.id);
    // Priority 3 (2nd, 4th), priority 1 (5th), then the earliest run_at of priority 0 (6th).
    expect(started.sort()).toEqual([1, 3, 4, 5].map((i) => jobs[i]!.id).sort());
    await worker.stop({ timeout: 0 });
  });

  it("given back at shutdown keep their attempts; started ones are refunded", async () => {
    await t.errand.enqueueMany(Array.from({ length: 6 }, () => ({ kind: "slow", payload: {} })));
    const worker = t.errand.worker({
      concurrency: 2,
      prefetch: 4,
      handlers: { slow: untilAborted },
    });
    await worker.start();
    await eventually(async () => (await rows()).every((r) => r.status === "running"), 10_000, "two running, four buffered");
    await worker.stop({ timeout: 0 });
    expect((await rows()).map((r) => [r.status, r.attempts])).toEqual(Array.from({ length: 6 }, () => ["ready", 0]));
  });
});
