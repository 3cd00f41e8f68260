import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { Errand, type Worker } from "../../src/index.js";
import { claimFloorSlackMs, queriesFor } from "../../src/sql/jobs.js";
import { eventually, freshSchema } from "../support/db.js";

// PostgreSQL only: a transaction held open beside a working worker needs a second
// connection. Jobs that become ready below a worker's claim floor without a notice that
// says so (see src/worker/claim-floor.ts) run within one poll interval; those it rescued
// itself, at once.
const url = process.env.ERRAND_TEST_URL!;
const admin = new pg.Pool({ connectionString: url, max: 4 });
afterAll(() => admin.end());

const pollIntervalMs = 500;

interface Parts {
  readonly schema: string;
  readonly errand: Errand;
  readonly worker: Worker;
  /** The ids the worker ran, in order. */
  readonly ran: string[];
  readonly start: () => Promise<void>;
  /** A connection of the test's own. */
  readonly other: pg.PoolClient;
}

/** Runs `body` with a fresh errand, a worker on it (`options` added to its own) and a connection of the test's own. */
async function withWorker(body: (parts: Parts) => Promise<void>, options: { pollIntervalMs?: number; rescueIntervalMs?: number; poolSize?: number } = {}): Promise<void> {
  const schema = freshSchema();
  const errand = await Errand.open({ connectionString: url, schema, poolSize: options.poolSize ?? 3 });
  const ran: string[] = [];
  const worker = errand.worker({
    pollIntervalMs: options.pollIntervalMs ?? pollIntervalMs,
    ...(options.rescueIntervalMs === undefined ? {} : { rescueIntervalMs: options.rescueIntervalMs }),
    handlers: { k: async (_: unknown, ctx) => void ran.push(ctx.id) },
  });
  const other = await admin.connect();
  try {
    await body({ schema, errand, worker, ran, start: () => worker.start(), other });
  } finally {
    await other.query("ROLLBACK");
    other.release();
    await worker.stop();
    await errand.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  }
}

const statusOf = async (schema: string, ids: readonly string[]) =>
  (await admin.query<{ status: string }>(`SELECT status FROM ${schema}.all_jobs WHERE id = ANY($1::bigint[])`, [ids])).rows.map((r) => r.status);

describe("the claim floor, with a transaction beside the worker", () => {
  it("runs a job whose enqueue transaction began before the floor and committed after it at once: its notice carries that start", async () => {
    await withWorker(async ({ schema, errand, ran, start, other }) => {
      await start();
      await other.query("BEGIN");
      const { rows } = await other.query<{ id: string }>(`INSERT INTO ${schema}.jobs (kind, payload) VALUES ('k', '{}') RETURNING id::text`);
      // Older than the claim's slack: without the notice's time, only the floor's probe (a poll interval: 60 s) would find it.
      await eventually(async () => (await other.query(`SELECT clock_timestamp() - now() > $1 * interval '3 milliseconds' AS old`, [claimFloorSlackMs])).rows[0].old, 5_000, "the transaction to age");
      const after = await errand.enqueueMany(Array.from({ length: 3 }, () => ({ kind: "k", payload: {} })));
      await eventually(async () => (await statusOf(schema, after.map((j) => j.id))).every((s) => s === "done"), 10_000, "the jobs enqueued after it: the floor moves past it");
      await other.query("COMMIT");
      await eventually(async () => (await statusOf(schema, [rows[0]!.id]))[0] === "done", 10_000, "the late job, long before the probe");
      expect(ran).toEqual([...after.map((j) => j.id), rows[0]!.id]);
    }, { pollIntervalMs: 60_000 });
  });

  it("runs a job enqueued with a runAt in the past at once, and one far in the past: the enqueue's notice carries that run_at", async () => {
    await withWorker(async ({ schema, errand, ran, start }) => {
      await start();
      const recent = await errand.enqueueMany(Array.from({ length: 3 }, () => ({ kind: "k", payload: {} })));
      await eventually(async () => (await statusOf(schema, recent.map((j) => j.id))).every((s) => s === "done"), 10_000, "the recent jobs: the floor moves past them");
      // Below the floor by seconds (lowered to it) and by more than a poll interval (probed at
      // once); without the notice, only the probe a poll interval later (60 s) would find them.
      for (const agoMs of [5_000, 3_600_000]) {
        const { id } = await errand.enqueue("k", {}, { runAt: new Date(Date.now() - agoMs) });
        await eventually(async () => (await statusOf(schema, [id]))[0] === "done", 10_000, `the job due ${agoMs} ms ago, long before the probe`);
        expect(ran.at(-1)).toBe(id);
      }
    }, { pollIntervalMs: 60_000 });
  });

  it("runs jobs another claim skipped and then rolled back", async () => {
    await withWorker(async ({ schema, errand, ran, start, other }) => {
      const jobs = await errand.enqueueMany(Array.from({ length: 5 }, () => ({ kind: "k", payload: {}, runAt: new Date(Date.now() - 60_000) })));
      // A claim of the first two, as another worker's would be, that will roll back.
      await other.query("BEGIN");
      await other.query(`SELECT id FROM ${schema}.jobs ORDER BY id LIMIT 2 FOR UPDATE`);
      await start();
      await eventually(() => ran.length === 3, 10_000, "the jobs the other claim did not lock");
      await other.query("ROLLBACK");
      await eventually(async () => (await statusOf(schema, jobs.map((j) => j.id))).every((s) => s === "done"), 10 * pollIntervalMs, "the skipped jobs");
      expect(ran).toEqual([...jobs.slice(2), ...jobs.slice(0, 2)].map((j) => j.id));
    });
  });

  it("runs a job given back behind where another worker's claim left off, beyond this worker's floor", async () => {
    await withWorker(async ({ schema, errand, ran, start, other }) => {
      const past = new Date(Date.now() - 3_600_000);
      const [first] = await errand.enqueueMany([{ kind: "k", payload: {}, runAt: past }]);
      await start();
      await eventually(() => ran.length === 1, 10_000, "the first job: the worker's floor");
      // Another worker's claim of three later jobs, committed with its lease record, and the
      // middle one given back (its handler's claim rolled back): ready between this worker's
      // floor and where that claim left off, so neither a probe nor a shared claim meets it.
      await other.query("BEGIN");
      const { rows } = await other.query<{ id: string }>(
        `INSERT INTO ${schema}.jobs (kind, payload, run_at) SELECT 'k', '{}', $1 FROM generate_series(1, 3) RETURNING id::text`, [past]);
      const key = await other.query(`SELECT floor(extract(epoch FROM $1::timestamptz) * 1000000)::float8 AS us`, [past]);
      await other.query(queriesFor(schema).claimFrom.text, [3, "other", "{}", 60_000, 3, "default", ["k"], 0, key.rows[0].us, first!.id, true]);
      await other.query(`UPDATE ${schema}.jobs SET status = 'ready', locked_by = NULL, locked_until = NULL WHERE id = $1`, [rows[1]!.id]);
      await other.query("COMMIT");
      await eventually(async () => (await statusOf(schema, [rows[1]!.id]))[0] === "done", 10 * pollIntervalMs, "the job given back");
      expect(ran).toEqual([first!.id, rows[1]!.id]);
    });
  });

  it("runs a job the worker rescued below its floor at once: the rescue drops the floor", async () => {
    // A rescue sets run_at to its statement's now(), above the floor of every claim made
    // before it; but a claim made while the rescue runs can take a job enqueued after that
    // now(). Here the rescue waits for a lock (on outcome_counts, which it writes) while the
    // worker claims a later job: the rescued job lands below the floor, and below the claim's
    // slack. Only the drop brings it back before the floor expires (a poll interval: 60 s).
    await withWorker(
      async ({ schema, errand, worker, ran, start, other }) => {
        const [lost] = await errand.enqueueMany([{ kind: "k", payload: {} }]);
        // Claimed by a worker that died: its lease ran out a minute ago.
        await admin.query(
          `UPDATE ${schema}.jobs SET status = 'running', attempts = 1, locked_by = 'gone', started_at = now() - interval '2 minutes',
                  locked_until = now() - interval '1 minute' WHERE id = $1`,
          [lost!.id],
        );
        await start();
        await other.query("BEGIN");
        await other.query(`LOCK TABLE ${schema}.outcome_counts IN SHARE MODE`);
        const rescuing = worker.rescue();
        const rescueWaiting = async () =>
          (
            await admin.query(
              `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%candidates AS%' AND query LIKE $1
                 AND clock_timestamp() - xact_start > $2 * interval '3 milliseconds'`,
              [`%${schema}%`, claimFloorSlackMs],
            )
          ).rows.length > 0;
        await eventually(rescueWaiting, 10_000, "the rescue to wait for the lock, its now() older than the claim's slack");
        const [later] = await errand.enqueueMany([{ kind: "k", payload: {} }]);
        await eventually(() => ran.includes(later!.id), 10_000, "the later job: the floor moves past it");
        await other.query("COMMIT");
        expect(await rescuing).toEqual({ ready: 1, dead: 0 });
        const { rows: [order] } = await admin.query<{ below: boolean }>(
          `SELECT l.run_at < k.run_at - $3 * interval '1 millisecond' AS below FROM ${schema}.all_jobs l, ${schema}.all_jobs k WHERE l.id = $1 AND k.id = $2`,
          [lost!.id, later!.id, claimFloorSlackMs],
        );
        expect(order?.below).toBe(true);
        await eventually(async () => (await statusOf(schema, [lost!.id]))[0] === "done", 10_000, "the rescued job, long before the floor expires");
        expect(ran).toEqual([later!.id, lost!.id]);
      },
      { pollIntervalMs: 60_000, rescueIntervalMs: 0, poolSize: 6 },
    );
  });
});

describe("a claim from the floor, where the other workers' claims left off (migration 022)", () => {
  it("starts after the newest claim of the same queue, kinds and priority, unless told not to", async () => {
    const schema = freshSchema();
    const errand = await Errand.open({ connectionString: url, schema, poolSize: 2 });
    try {
      // One run_at for all (an hour ago: below the claim's slack), so the ids give the order.
      const jobs = await errand.enqueueMany(Array.from({ length: 8 }, () => ({ kind: "k", payload: {}, runAt: new Date(Date.now() - 3_600_000) })));
      const ids = jobs.map((j) => j.id);
      const runAtUs = Number((await admin.query(`SELECT floor(extract(epoch FROM run_at) * 1000000)::float8 AS us FROM ${schema}.jobs WHERE id = $1`, [ids[0]])).rows[0].us);
      const { claimFrom } = queriesFor(schema);
      /** A claim of `limit` by `worker` from the floor before every job, of `kinds` in `queue`, `shared` or not. */
      const claim = async (worker: string, limit: number, shared: boolean, kinds = ["k"], queue = "default") =>
        (await admin.query<{ id: string }>(claimFrom.text, [limit, worker, "{}", 60_000, limit, queue, kinds, 0, runAtUs, "0", shared])).rows.map((r) => String(r.id));

      expect(await claim("a", 3, true)).toEqual(ids.slice(0, 3));
      const { rows: records } = await admin.query(`SELECT worker, queue, kinds, last_priority, last_id::text FROM ${schema}.leases ORDER BY id`);
      expect(records).toEqual([{ worker: "a", queue: "default", kinds: ["k"], last_priority: 0, last_id: ids[2] }]);
      // The second of them is given back (a claim that held it rolled back): ready below where "a" left off.
      await admin.query(`UPDATE ${schema}.jobs SET status = 'ready', locked_by = NULL, locked_until = NULL WHERE id = $1`, [ids[1]]);
      // Other kinds, another queue, or not shared: from the floor, so the job given back first.
      expect(await claim("b", 1, true, ["k", "other"])).toEqual([ids[1]]);
      await admin.query(`UPDATE ${schema}.jobs SET status = 'ready', locked_by = NULL, locked_until = NULL WHERE id = $1`, [ids[1]]);
      expect(await claim("b", 1, true, ["k"], "elsewhere")).toEqual([]);
      expect(await claim("b", 1, false)).toEqual([ids[1]]);
      await admin.query(`UPDATE ${schema}.jobs SET status = 'ready', locked_by = NULL, locked_until = NULL WHERE id = $1`, [ids[1]]);
      // Shared: from the newest record of queue default and kinds {k}, "a"'s once "b"'s are gone
      // (heartbeats replace records), which passes the job given back.
      await admin.query(`DELETE FROM ${schema}.leases WHERE worker = 'b'`);
      expect(await claim("c", 2, true)).toEqual(ids.slice(3, 5));
      expect(await claim("d", 10, true, ["k"])).toEqual(ids.slice(5));
      // Nothing left after the newest claim: the job given back waits for a claim from its floor alone (after a probe lowered it).
      expect(await claim("d", 10, true, ["k"])).toEqual([]);
      expect(await claim("d", 10, false, ["k"])).toEqual([ids[1]]);
    } finally {
      await errand.close();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });
});
