import { describe, expect, it } from "vitest";
import { Pruner, Purger } from "../../src/maintenance/purger.js";
import { defaultPurgeDutyCycle } from "../../src/defaults.js";
import { useTestErrand } from "../support/db.js";

const t = useTestErrand();

const day = 86_400_000;

/**
 * `n` jobs of `kind` moved to `status`, finished `daysAgo` days ago. Plain SQL is not
 * counted by errand's statements, so the done count is added as the completer would.
 */
async function seed(n: number, kind: string, status: "done" | "dead", daysAgo: number): Promise<void> {
  await t.sql(`INSERT INTO ${t.schema}.jobs (kind, payload) SELECT $1, to_jsonb(g) FROM generate_series(1, $2) g`, [kind, n]);
  await t.sql(`UPDATE ${t.schema}.jobs SET status = $1, attempts = 1, finished_at = now() - $2 * interval '1 day' WHERE kind = $3 AND status = 'ready'`, [status, daysAgo, kind]);
  if (status === "done") {
    await t.sql(`INSERT INTO ${t.schema}.done_counts AS c (kind, shard, done) VALUES ($1, 0, $2)
                 ON CONFLICT (kind, shard) DO UPDATE SET done = c.done + excluded.done`, [kind, n]);
  }
}

const count = async (where: string) => Number((await t.sql<{ n: string }>(`SELECT count(*) AS n FROM ${t.schema}.all_jobs WHERE ${where}`))[0]!.n);

describe("purger", () => {
  it("deletes done jobs past 7 days in small batches and keeps dead jobs", async () => {
    await seed(20_000, "old", "done", 8);
    await seed(3_000, "recent", "done", 6);
    await seed(500, "poison", "dead", 30);
    await t.sql(`INSERT INTO ${t.schema}.jobs (kind, payload) SELECT 'waiting', '{}' FROM generate_series(1, 100)`);
    expect((await t.errand.stats()).total.done).toBe(23_000);

    expect(await t.errand.purge({ dryRun: true })).toEqual({ done: 20_000, cancelled: 0, dead: 0, finishedBatches: 0, batches: 0, dryRun: true });
    expect(await count("true")).toBe(23_600);

    const result = await t.errand.purge({ batchSize: 1000 });
    // One DELETE in done_jobs finding none (these rows were marked done by SQL, in jobs), 21
    // of done rows in jobs (the last one short), one of cancelled rows and one of batch records finding none.
    expect(result).toEqual({ done: 20_000, cancelled: 0, dead: 0, finishedBatches: 0, batches: 24, dryRun: false });
    expect(await count("status = 'done'")).toBe(3_000);
    expect(await count("kind = 'old'")).toBe(0);
    expect(await count("status = 'dead'")).toBe(500);
    expect(await count("status = 'ready'")).toBe(100);
    // The done count follows the deletes (the trigger sees each batch).
    const stats = await t.errand.stats();
    expect([stats.total.done, stats.kinds.recent!.done, stats.kinds.old?.done ?? 0]).toEqual([3_000, 3_000, 0]);
    // Nothing left to do.
    expect(await t.errand.purge()).toEqual({ done: 0, cancelled: 0, dead: 0, finishedBatches: 0, batches: 4, dryRun: false });
  });

  it("deletes dead jobs only when configured, and honours --older-than", async () => {
    await seed(30, "poison", "dead", 40);
    await seed(20, "fresh-poison", "dead", 2);
    await seed(10, "k", "done", 2);
    expect(await t.errand.purge({ olderThanMs: day, deadOlderThanMs: 30 * day, dryRun: true })).toEqual({ done: 10, cancelled: 0, dead: 30, finishedBatches: 0, batches: 0, dryRun: true });
    expect(await t.errand.purge({ olderThanMs: day, deadOlderThanMs: 30 * day, batchSize: 7 })).toEqual({ done: 10, cancelled: 0, dead: 30, finishedBatches: 0, batches: 1 + 2 + 1 + 5 + 1, dryRun: false });
    expect(await count("status = 'dead'")).toBe(20);
    expect(await count("status = 'done'")).toBe(0);
  });

  it("deletes cancelled jobs past the same retention, and the done and cancelled counts follow", async () => {
    await seed(40, "k", "done", 8);
    const jobs = await t.errand.enqueueMany(Array.from({ length: 30 }, (_, i) => ({ kind: i < 20 ? "import" : "export", payload: i })));
    // One of them running when cancelled: it keeps its worker's name (locked_by) and is purged all the same.
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, locked_by = 'w', locked_until = now() + interval '1 hour' WHERE id = $1`, [jobs[0]!.id]);
    expect(await t.errand.cancel({ ids: jobs.map((j) => j.id) })).toHaveLength(30);
    const before = await t.errand.stats();
    expect([before.total.cancelled, before.kinds.import!.cancelled, before.kinds.export!.cancelled, before.total.done]).toEqual([30, 20, 10, 40]);
    // 25 of them cancelled 8 days ago, 5 (all 'export') yesterday.
    await t.sql(`UPDATE ${t.schema}.jobs SET finished_at = now() - CASE WHEN payload::int < 25 THEN interval '8 days' ELSE interval '1 day' END WHERE status = 'cancelled'`);

    expect(await t.errand.purge({ dryRun: true })).toEqual({ done: 40, cancelled: 25, dead: 0, finishedBatches: 0, batches: 0, dryRun: true });
    expect(await t.errand.purge({ batchSize: 10 })).toEqual({ done: 40, cancelled: 25, dead: 0, finishedBatches: 0, batches: 1 + 5 + 3 + 1, dryRun: false });
    expect(await count("status = 'cancelled'")).toBe(5);
    expect(await count("status = 'cancelled' AND finished_at < now() - interval '7 days'")).toBe(0);
    // The delete trigger subtracted each kind's cancelled rows, and only the done rows from done.
    const after = await t.errand.stats();
    expect([after.total.cancelled, after.kinds.import?.cancelled ?? 0, after.kinds.export!.cancelled, after.total.done]).toEqual([5, 0, 5, 0]);
    // A cancelled row deleted by hand is counted out too (the trigger, not the purger, keeps the count).
    await t.sql(`DELETE FROM ${t.schema}.jobs WHERE status = 'cancelled' AND payload = '29'`);
    expect((await t.errand.stats()).kinds.export!.cancelled).toBe(4);
  });

  it("finds cancelled jobs by age through an index, not by reading the table", async () => {
    await t.inTransaction(async (tx) => {
      // With sequential scans priced out, the plan shows the index when one fits, a Seq Scan when none does.
      await tx.query("SET LOCAL enable_seqscan = off");
      const explain = async (sql: string) => (await tx.query<Record<string, string>>(`EXPLAIN ${sql}`)).rows.map((r) => Object.values(r)[0]).join("\n");
      const cancelled = await explain(`SELECT id FROM ${t.schema}.jobs WHERE outcome = 'cancelled' AND finished_at < now() - interval '7 days' ORDER BY finished_at LIMIT 1000 FOR UPDATE SKIP LOCKED`);
      expect(cancelled).toMatch(/Index Scan using jobs_outcome_cancelled/);
      expect(cancelled).not.toMatch(/Seq Scan/);
    }, false);
  });

  it("deletes the records of batches finished past the retention once their jobs are gone", async () => {
    const member = (kind: string) => ({ kind, payload: {} });
    const gone = await t.errand.batch({ jobs: [member("a"), member("a")], then: member("after") });
    const withDead = await t.errand.batch({ jobs: [member("a"), member("poison")], then: member("after") });
    const recent = await t.errand.batch({ jobs: [member("a")], then: member("after") });
    const open = await t.errand.batch({ jobs: [member("a"), member("wait")], then: member("after") });
    // Members finish (the trigger finishes their batches); all but `recent` and the `wait` member 8 days ago.
    await t.sql(`UPDATE ${t.schema}.jobs SET status = CASE WHEN kind = 'poison' THEN 'dead' ELSE 'done' END, attempts = 1,
                   finished_at = now() - CASE WHEN batch_id = $1 THEN interval '0' ELSE interval '8 days' END
                 WHERE batch_id IS NOT NULL AND kind <> 'wait'`, [recent.batchId]);
    await t.sql(`UPDATE ${t.schema}.batches SET finished_at = now() - interval '8 days' WHERE id <> $1 AND finished_at IS NOT NULL`, [recent.batchId]);
    const exists = async (b: { batchId: string }) => (await t.errand.getBatch(b.batchId)) !== null;

    expect(await t.errand.purge({ dryRun: true })).toMatchObject({ finishedBatches: 1 });
    expect(await t.errand.purge()).toMatchObject({ finishedBatches: 1 });
    expect([await exists(gone), await exists(withDead), await exists(recent), await exists(open)]).toEqual([false, true, true, true]);
    // Once the dead member is purged too, its batch goes with it.
    expect(await t.errand.purge({ deadOlderThanMs: day, dryRun: true })).toMatchObject({ dead: 1, finishedBatches: 1 });
    expect(await t.errand.purge({ deadOlderThanMs: day })).toMatchObject({ dead: 1, finishedBatches: 1 });
    expect([await exists(withDead), await exists(recent), await exists(open)]).toEqual([false, true, true]);
  });

  it("drops stats buckets older than two hours", async () => {
    await t.sql(`INSERT INTO ${t.schema}.outcome_counts (bucket, kind, shard, done) VALUES (now() - interval '3 hours', 'k', 0, 5), (now() - interval '30 minutes', 'k', 0, 7)`);
    await t.errand.purge();
    expect(await t.sql(`SELECT done FROM ${t.schema}.outcome_counts`)).toEqual([{ done: expect.anything() }]);
    expect((await t.errand.stats()).total.lastHour.completed).toBe(7);
  });

  it("runs on a timer with start/stop and rejects bad options by name", async () => {
    await seed(5, "k", "done", 10);
    const results: number[] = [];
    const purger = new Purger(t.errand.driver, t.schema, { intervalMs: 60_000, onPurge: (r) => results.push(r.done) });
    await purger.start(); // resolves after the first purge
    expect(results).toEqual([5]);
    await purger.stop();
    expect(results).toEqual([5]);
    await expect(purger.runOnce()).resolves.toMatchObject({ done: 0 });
    await expect(t.errand.purge({ batchSize: 0 })).rejects.toThrow(/batchSize: must be an integer/);
    await expect(t.errand.purge({ olderThanMs: -1 })).rejects.toThrow(/olderThanMs: must be a number of milliseconds/);
    await expect(t.errand.purge({ olderThan: 1 } as never)).rejects.toThrow(/olderThan: unknown option — did you mean 'olderThanMs'\?/);
  });

  it("rests after each full batch for (1 - dutyCycle) / dutyCycle times the batch's time, and not at all with 1", async () => {
    await seed(3_000, "old", "done", 8);
    // A clock that moves 5 ms at each reading, so that every batch takes 5 ms, and rests that return at once but are recorded.
    let now = 0;
    const rests: number[] = [];
    const pace = { clock: { now: () => (now += 5) }, rest: async (ms: number) => void rests.push(ms) };
    const purger = new Purger(t.errand.driver, t.schema, { batchSize: 1_000, dutyCycle: 0.25 }, pace);
    // Three full batches of done rows in jobs, each followed by a rest of 3 × 5 ms; the short ones (the last of each kind of row) by none.
    expect(await purger.runOnce()).toMatchObject({ done: 3_000, batches: 1 + 4 + 1 + 1 });
    expect(rests).toEqual([15, 15, 15]);
    // The default (0.12): about seven times the batch's time.
    await seed(2_000, "old", "done", 8);
    rests.length = 0;
    expect(await new Purger(t.errand.driver, t.schema, { batchSize: 1_000 }, pace).runOnce()).toMatchObject({ done: 2_000 });
    const rest = (5 * (1 - defaultPurgeDutyCycle)) / defaultPurgeDutyCycle;
    expect(defaultPurgeDutyCycle).toBe(0.12);
    expect(rests).toEqual([rest, rest]);
    await seed(2_000, "old", "done", 8);
    rests.length = 0;
    expect(await new Purger(t.errand.driver, t.schema, { batchSize: 1_000, dutyCycle: 1 }, pace).runOnce()).toMatchObject({ done: 2_000 });
    expect(rests).toEqual([]);
    for (const bad of [0, -0.5, 1.5, Number.NaN, "0.5"]) {
      await expect(t.errand.purge({ dutyCycle: bad as number })).rejects.toThrow(/^dutyCycle: must be a number more than 0 and at most 1/);
    }
  });

  it("stop() ends a purge after its batch under way, cutting its rest short", async () => {
    await seed(3_000, "old", "done", 8);
    // The first rest waits until stop() aborts it, and says when it began.
    let resting!: () => void;
    const rested = new Promise<void>((resolve) => (resting = resolve));
    const rest = (_ms: number, signal: AbortSignal | undefined) =>
      new Promise<void>((resolve) => {
        signal?.addEventListener("abort", () => resolve());
        resting();
      });
    const results: { done: number; batches: number }[] = [];
    const purger = new Purger(t.errand.driver, t.schema, { batchSize: 1_000, intervalMs: 60_000, onPurge: (r) => results.push(r) }, { rest });
    const started = purger.start();
    await rested;
    await purger.stop();
    await started;
    // One batch deleted (after an empty one in done_jobs), then the purge ended in its rest: the rest is left for the next run.
    expect(results).toEqual([expect.objectContaining({ done: 1_000, batches: 2 })]);
    expect(await count("kind = 'old'")).toBe(2_000);
    expect(await t.errand.purge({ dutyCycle: 1 })).toMatchObject({ done: 2_000 });
  });

  it("still answers to its former name Pruner, whose onPrune receives each result", async () => {
    await seed(3, "k", "done", 10);
    const results: number[] = [];
    const pruner = new Pruner(t.errand.driver, t.schema, { onPrune: (r) => results.push(r.done) });
    await pruner.start();
    await pruner.stop();
    expect(results).toEqual([3]);
  });
});
