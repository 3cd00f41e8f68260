import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type TestErrand, eventually, testErrand } from "./support/db.js";

// PostgreSQL only: the adaptation is driver-independent, and on the embedded database
// this test's own polling queries share the single connection with the worker.
let t: TestErrand;
beforeEach(async () => {
  t = await testErrand();
});
afterEach(() => t.cleanup());

describe("adaptive prefetch", () => {
  it("adapts its prefetch: big batches for fast jobs, no hoarding of slow ones", async () => {
    const running = async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.jobs WHERE status = 'running'`))[0]!.n;
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
    await eventually(async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.jobs WHERE status <> 'done'`))[0]!.n === 0, 30_000, "the fast jobs");
    // Slow jobs: once two adaptation windows (a quarter second each, on the worker's own
    // clock, which a test cannot set) have seen nothing finish, the buffer falls back to
    // concurrency. Waiting longer changes nothing, so a slow machine cannot break this.
    await new Promise((resolve) => setTimeout(resolve, 600));
    await t.errand.enqueueMany(Array.from({ length: 50 }, () => ({ kind: "slow", payload: {} })));
    await eventually(async () => worker.activeCount === 2 && (await running()) >= 4, 5_000, "two slow jobs running and two buffered");
    expect(await running()).toBe(4);
    gateOpen = true;
    release();
    await worker.stop();
    expect(gateOpen).toBe(true);
  });
});
