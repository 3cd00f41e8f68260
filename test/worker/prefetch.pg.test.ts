import { describe, expect, it } from "vitest";
import { eventually, useTestErrand } from "../support/db.js";

// PostgreSQL only: the adaptation is driver-independent, and on the embedded database
// this test's own polling queries share the single connection with the worker.
const t = useTestErrand();

describe("adaptive prefetch", () => {
  it("adapts its prefetch: big batches for fast jobs, no hoarding of slow ones", async () => {
    const running = async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs WHERE status = 'running'`))[0]!.n;
    await t.errand.enqueueMany(Array.from({ length: 4000 }, () => ({ kind: "fast", payload: {} })));
    let gateOpen = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // No polling: a poll's claim attempt would start a fresh adaptation window at a moment
    // this test does not control. Only the notifications of the enqueues below wake it.
    const worker = t.errand.worker({ concurrency: 2, pollIntervalMs: 600_000, handlers: { fast: async () => {}, slow: () => gate } });
    await worker.start();
    // Fast jobs: the worker soon leases more than concurrency + concurrency at once.
    let most = 0;
    await eventually(async () => (most = Math.max(most, await running())) > 8, 20_000, "a batch larger than the fixed default");
    await eventually(async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs WHERE status <> 'done'`))[0]!.n === 0, 30_000, "the fast jobs");
    // Slow jobs: once the adaptation window (a quarter second, on the process clock) has
    // seen nothing finish, the worker claims only what it can start: nothing is buffered.
    await new Promise((resolve) => setTimeout(resolve, 600));
    await t.errand.enqueueMany(Array.from({ length: 50 }, () => ({ kind: "slow", payload: {} })));
    await eventually(() => worker.activeCount === 2, 5_000, "two slow jobs running");
    expect(await running()).toBe(2);
    gateOpen = true;
    release();
    await worker.stop();
    expect(gateOpen).toBe(true);
  });
});

describe("jobs queued behind slow ones", () => {
  it("are given back by a busy worker's buffer and run by an idle worker", { timeout: 60_000 }, async () => {
    const shortDone = async () =>
      (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs WHERE kind = 'short' AND status = 'done'`))[0]!.n;
    const heldBy = async (worker: string) =>
      (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs WHERE kind = 'short' AND status = 'running' AND locked_by = $1`, [worker]))[0]!.n;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Fast jobs first, so the busy worker's adaptive prefetch is large when it reaches the
    // two long jobs (concurrency 2: they take every slot) and the short ones behind them.
    await t.errand.enqueueMany(Array.from({ length: 3000 }, () => ({ kind: "fast", payload: {}, priority: 2 })));
    await t.errand.enqueueMany(Array.from({ length: 2 }, () => ({ kind: "long", payload: {}, priority: 1 })));
    await t.errand.enqueueMany(Array.from({ length: 10 }, () => ({ kind: "short", payload: {} })));
    const busy = t.errand.worker({ workerId: "busy", concurrency: 2, handlers: { fast: async () => {}, long: () => gate, short: async () => {} } });
    const idle = t.errand.worker({ workerId: "idle", concurrency: 2, handlers: { short: async () => {} } });
    try {
      await busy.start();
      // The busy worker buffers short jobs behind its two long ones…
      await eventually(async () => (await heldBy("busy")) > 0, 30_000, "the busy worker to buffer short jobs");
      const hoarded = await heldBy("busy");
      const from = Date.now();
      await idle.start();
      // …and gives them back within maxBufferWaitMs (1 s), while the long jobs still run.
      await eventually(async () => (await shortDone()) === 10, 5_000, "every short job done");
      const tookMs = Date.now() - from;
      console.log(`short jobs buffered by the busy worker: ${hoarded}; all 10 done ${tookMs} ms after the idle worker started`);
      expect(busy.activeCount).toBe(2);
    } finally {
      release();
      await Promise.all([busy.stop(), idle.stop()]);
    }
  });
});
