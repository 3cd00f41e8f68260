import { describe, expect, it } from "vitest";
import { eventually, useTestErrand } from "../support/db.js";

// A worker claims from a floor (the last job it claimed; src/worker/claim-floor.ts), not
// from the start of the ready index: jobs that become ready below it must still run, at
// once when the worker is told (given back, resumed), within one poll interval otherwise.
const t = useTestErrand();

const status = async (ids: readonly string[]) =>
  (await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE id = ANY($1::bigint[]) ORDER BY id`, [ids])).map((r) => r.status);
const allDone = (ids: readonly string[]) => async () => (await status(ids)).every((s) => s === "done");
const anHourAgo = () => new Date(Date.now() - 3_600_000);

describe("the claim floor", () => {
  it("lets a job enqueued below it (run_at in the past) wait at most one poll interval, behind the jobs above it", async () => {
    const pollIntervalMs = 2_000;
    const ran: string[] = [];
    const worker = t.errand.worker({ pollIntervalMs, handlers: { k: async (_: unknown, ctx) => void ran.push(ctx.id) } });
    await worker.start();
    try {
      const first = await t.errand.enqueueMany(Array.from({ length: 3 }, () => ({ kind: "k", payload: {} })));
      await eventually(allDone(first.map((j) => j.id)), 10_000, "the first jobs, which set the floor");
      const [past, now] = await t.errand.enqueueMany([
        { kind: "k", payload: {}, runAt: anHourAgo() },
        { kind: "k", payload: {} },
      ]);
      await eventually(allDone([past!.id, now!.id]), 4 * pollIntervalMs, "the job below the floor too");
      // In claim order the old job comes first; from the floor, the new one ran first.
      expect(ran.slice(3)).toEqual([now!.id, past!.id]);
    } finally {
      await worker.stop();
    }
  });

  it("looks below a worker's floor at once when another worker gives jobs back there", async () => {
    // The given-back jobs are old (below the claim's slack too): only the notice can bring them back before the poll.
    const held = await t.errand.enqueueMany(Array.from({ length: 4 }, () => ({ kind: "k", payload: {}, runAt: anHourAgo() })));
    const first = t.errand.worker({
      workerId: "first",
      concurrency: 1,
      prefetch: 3,
      handlers: { k: (_: unknown, ctx) => new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve())) },
    });
    await first.start();
    await eventually(async () => (await status(held.map((j) => j.id))).every((s) => s === "running"), 10_000, "one running, three buffered");
    const later = await t.errand.enqueueMany(Array.from({ length: 2 }, () => ({ kind: "k", payload: {} })));
    const ranBySecond: string[] = [];
    const second = t.errand.worker({ workerId: "second", pollIntervalMs: 60_000, handlers: { k: async (_: unknown, ctx) => void ranBySecond.push(ctx.id) } });
    await second.start();
    try {
      await eventually(allDone(later.map((j) => j.id)), 10_000, "the later jobs, past the held ones: the second worker's floor");
      await first.stop({ timeout: 0 });
      await eventually(allDone(held.map((j) => j.id)), 10_000, "the jobs given back, long before the poll");
      expect(ranBySecond.sort()).toEqual([...held, ...later].map((j) => j.id).sort());
    } finally {
      await second.stop();
    }
  });

  it("starts a restarted worker where its queue's claims left off, and runs what lies below within a poll interval", async () => {
    // The hint (the queue's last finished job) spares a restart the read of every dead
    // entry in front of the queue; the probe a poll interval later finds the job below it.
    const pollIntervalMs = 2_000;
    const handlers = (ran: string[]) => ({ k: async (_: unknown, ctx: { id: string }) => void ran.push(ctx.id) });
    const before = t.errand.worker({ handlers: handlers([]) });
    await before.start();
    const first = await t.errand.enqueueMany(Array.from({ length: 3 }, () => ({ kind: "k", payload: {} })));
    try {
      await eventually(allDone(first.map((j) => j.id)), 10_000, "the jobs that finish before the restart");
    } finally {
      await before.stop();
    }
    const [past, now] = await t.errand.enqueueMany([
      { kind: "k", payload: {}, runAt: anHourAgo() },
      { kind: "k", payload: {} },
    ]);
    const ran: string[] = [];
    const after = t.errand.worker({ pollIntervalMs, handlers: handlers(ran) });
    await after.start();
    try {
      await eventually(allDone([past!.id, now!.id]), 4 * pollIntervalMs, "both jobs, the one below the hint too");
      // From the start the old job would come first; from the hint, the new one ran first.
      expect(ran).toEqual([now!.id, past!.id]);
    } finally {
      await after.stop();
    }
  });

  it("claims a resumed kind's jobs, below the floor, at once", async () => {
    await t.errand.pause({ kind: "later" });
    const [waiting] = await t.errand.enqueueMany([{ kind: "later", payload: {}, runAt: anHourAgo() }]);
    const worker = t.errand.worker({ pollIntervalMs: 60_000, handlers: { later: async () => {}, now: async () => {} } });
    await worker.start();
    try {
      const now = await t.errand.enqueueMany(Array.from({ length: 3 }, () => ({ kind: "now", payload: {} })));
      await eventually(allDone(now.map((j) => j.id)), 10_000, "the jobs above the paused one");
      expect(await status([waiting!.id])).toEqual(["ready"]);
      await t.errand.resume({ kind: "later" });
      await eventually(allDone([waiting!.id]), 10_000, "the resumed job, long before the poll");
    } finally {
      await worker.stop();
    }
  });
});
