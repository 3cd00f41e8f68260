import { describe, expect, it } from "vitest";
import { useTestErrand } from "../support/db.js";

// Migration 018: a job errand's worker completes leaves the jobs table for done_jobs in the
// completing statement, unless it carries what must stay readable in jobs (a dedupe key, a
// batch, a concurrency key). Every reader of a job by id, of results and of stats sees it
// wherever it is.
const t = useTestErrand();

const day = 86_400_000;
/** Where each job is: "jobs", "done_jobs", or "gone". */
async function tableOf(ids: readonly string[]): Promise<string[]> {
  const rows = await t.sql<{ id: string; at: string }>(
    `SELECT id::text, 'jobs' AS at FROM ${t.schema}.jobs WHERE id = ANY($1::bigint[])
     UNION ALL SELECT id::text, 'done_jobs' FROM ${t.schema}.done_jobs WHERE id = ANY($1::bigint[])`,
    [ids],
  );
  return ids.map((id) => rows.filter((r) => r.id === id).map((r) => r.at).join("+") || "gone");
}

describe("done jobs", () => {
  it("move to done_jobs as they complete, with their result; jobs that must stay readable in jobs stay", async () => {
    const [plain, keyed, limited] = await t.errand.enqueueMany([
      { kind: "k", payload: { n: 1 } },
      { kind: "k", payload: { n: 2 }, dedupeKey: "once" },
      { kind: "k", payload: { n: 3 }, concurrencyKey: "tenant:1" },
    ]);
    const batch = await t.errand.batch({ jobs: [{ kind: "k", payload: { n: 4 } }], then: { kind: "then" } });
    const worker = t.errand.worker({ handlers: { k: async (payload: { n: number }) => ({ twice: payload.n * 2 }), then: async () => {} } });
    while ((await worker.runOnce()) > 0);
    const ids = [plain!.id, keyed!.id, limited!.id, batch.jobIds[0]!];
    expect(await tableOf(ids)).toEqual(["done_jobs", "jobs", "jobs", "jobs"]);

    // Read back wherever they are: the whole job, its result, done at its attempt.
    for (const [i, id] of ids.entries()) {
      expect(await t.errand.getJob(id)).toMatchObject({ id, status: "done", attempts: 1, result: { twice: (i + 1) * 2 }, lockedBy: null });
    }
    const moved = (await t.sql<Record<string, unknown>>(`SELECT * FROM ${t.schema}.done_jobs WHERE id = $1`, [plain!.id]))[0]!;
    expect(moved).toMatchObject({ kind: "k", payload: { n: 1 }, status: "done", attempts: 1, locked_until: null, locked_by: null, queue: "default" });
    expect(moved.started_at).not.toBeNull();
    expect(moved.finished_at).not.toBeNull();
    expect((await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs WHERE status = 'done'`))[0]!.n).toBe(5); // + the batch's callback
    expect((await t.errand.stats()).total.done).toBe(5);
    // The retained key still holds: a second enqueue is a duplicate.
    expect(await t.errand.enqueue("k", { n: 5 }, { dedupeKey: "once" })).toMatchObject({ id: keyed!.id, duplicate: true });
  });

  it("a job completed in the handler's own transaction moves too, with that transaction", async () => {
    const { id } = await t.errand.enqueue("k", {});
    const worker = t.errand.worker({
      handlers: {
        k: async (_: unknown, ctx) => {
          await t.inTransaction(async (tx) => {
            await tx.query(`SELECT 1`);
            await ctx.complete(tx);
          });
        },
      },
    });
    await worker.runOnce();
    expect(await tableOf([id])).toEqual(["done_jobs"]);
    expect(await t.errand.getJob(id)).toMatchObject({ status: "done", attempts: 1 });
  });

  it("cannot be cancelled: the error says the job is done, and nothing changes", async () => {
    const [done, waiting] = await t.errand.enqueueMany([
      { kind: "k", payload: {} },
      { kind: "later", payload: {} },
    ]);
    await t.errand.worker({ handlers: { k: async () => {} } }).runOnce();
    await expect(t.errand.cancel({ ids: [done!.id, waiting!.id] })).rejects.toMatchObject({ code: "job_finished", message: expect.stringContaining(`job ${done!.id} (done)`) });
    expect((await t.errand.getJob(waiting!.id))!.status).toBe("ready");
  });

  it("are purged from both tables past the retention, and the done count follows", async () => {
    const jobs = await t.errand.enqueueMany(Array.from({ length: 6 }, (_, i) => ({ kind: "k", payload: { i } })));
    const worker = t.errand.worker({ handlers: { k: async () => {} } });
    while ((await worker.runOnce()) > 0);
    expect(await tableOf(jobs.map((j) => j.id))).toEqual(Array.from({ length: 6 }, () => "done_jobs"));
    // Done rows from before the upgrade (or marked done by plain SQL) are in jobs.
    await t.sql(`INSERT INTO ${t.schema}.jobs (kind, payload, status, finished_at) SELECT 'k', '{}', 'done', now() - interval '8 days' FROM generate_series(1, 3)`);
    await t.sql(`INSERT INTO ${t.schema}.done_counts AS c (kind, shard, done) VALUES ('k', 0, 3) ON CONFLICT (kind, shard) DO UPDATE SET done = c.done + 3`);
    // SQL time travel: four of the moved jobs finished 8 days ago.
    await t.sql(`UPDATE ${t.schema}.done_jobs SET finished_at = now() - interval '8 days' WHERE id = ANY($1::bigint[])`, [jobs.slice(0, 4).map((j) => j.id)]);
    expect((await t.errand.stats()).total.done).toBe(9);

    expect(await t.errand.purge({ dryRun: true })).toMatchObject({ done: 7 });
    expect(await t.errand.purge({ olderThanMs: 7 * day, batchSize: 3 })).toMatchObject({ done: 7 });
    expect(await tableOf(jobs.map((j) => j.id))).toEqual(["gone", "gone", "gone", "gone", "done_jobs", "done_jobs"]);
    expect((await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.jobs WHERE status = 'done'`))[0]!.n).toBe(0);
    expect((await t.errand.stats()).total.done).toBe(2);
  });

  it("are counted again when either table is truncated", async () => {
    await t.errand.enqueueMany([
      { kind: "k", payload: {} },
      { kind: "k", payload: {}, dedupeKey: "kept" },
    ]);
    const worker = t.errand.worker({ handlers: { k: async () => {} } });
    while ((await worker.runOnce()) > 0);
    expect((await t.errand.stats()).total.done).toBe(2);
    await t.sql(`TRUNCATE ${t.schema}.done_jobs`);
    expect((await t.errand.stats()).total.done).toBe(1);
    await t.sql(`TRUNCATE ${t.schema}.jobs`);
    expect((await t.errand.stats()).total.done).toBe(0);
  });
});
