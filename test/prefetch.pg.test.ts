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
    const worker = t.errand.worker({ concurrency: 2, handlers: { fast: async () => {}, slow: () => gate } });
    await worker.start();
    // Fast jobs: the worker soon leases more than concurrency + concurrency at once.
    let most = 0;
    await eventually(async () => (most = Math.max(most, await running())) > 8, 20_000, "a batch larger than the fixed default");
    await eventually(async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.jobs WHERE status <> 'done'`))[0]!.n === 0, 30_000, "the fast jobs");
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
