import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

describe("a batch whose last members finish together on different worker processes", () => {
  it("enqueues its callback exactly once, with the right counts (50 rounds, 4 workers)", { timeout: 240_000 }, async () => {
    const rounds = 50;
    const workers = Array.from({ length: 4 }, (_, i) => t.worker(`w${i}`, ["--concurrency", "1", "--prefetch", "0", "--poll-interval", "0.05"]));
    for (let round = 0; round < rounds; round++) {
      const group = `round-${round}`;
      // Four members, one per worker: they wait for each other and then finish at once; one fails for good.
      const { batchId, jobIds } = await t.errand.batch({
        jobs: [0, 1, 2, 3].map((i) => ({ kind: "barrier", payload: { group, n: 4, fail: i === 3 }, maxAttempts: 1 })),
        then: { kind: "record", payload: { ms: 0, round } },
      });
      const batch = await eventually(
        async () => {
          for (const w of workers) if (w.hasExited()) throw new Error(`${w.name} exited: ${w.stderr().slice(-2000)}`);
          const found = await t.errand.getBatch(batchId);
          return found?.status === "finished" ? found : undefined;
        },
        30_000,
        `batch ${batchId} (round ${round}) to finish`,
      );
      expect(batch).toMatchObject({ total: 4, remaining: 0, done: 3, dead: 1, cancelled: 0, failedIds: [jobIds[3]] });
      // The members ran on four different workers, one each.
      expect(new Set((await t.sql<{ worker: string }>(`SELECT worker FROM ${t.schema}.effects WHERE note = $1`, [group])).map((r) => r.worker)).size).toBe(4);
      const callbacks = await t.sql<{ id: string; payload: { round: number; batch: { done: number; dead: number } } }>(
        `SELECT id::text, payload FROM ${t.schema}.all_jobs WHERE kind = 'record' AND payload -> 'batch' ->> 'id' = $1`,
        [batchId],
      );
      expect(callbacks).toEqual([{ id: batch!.callbackJobId, payload: expect.objectContaining({ round, batch: expect.objectContaining({ done: 3, dead: 1 }) }) }]);
    }
    // Every callback was run, once, and no other job was enqueued.
    await eventually(async () => (await t.statusCounts()).done === rounds * 4, 30_000, "every callback to run");
    expect(await t.statusCounts()).toEqual({ done: rounds * 4, dead: rounds });
  });
});
