import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import { claimFloorSlackMs } from "../../src/sql/jobs.js";
import { eventually, freshSchema } from "../support/db.js";

// PostgreSQL only: a transaction held open beside a working worker needs a second
// connection. Jobs that become ready below a worker's claim floor without a notice that
// says so (see src/worker/claim-floor.ts) run within one poll interval.
const url = process.env.ERRAND_TEST_URL!;
const admin = new pg.Pool({ connectionString: url, max: 4 });
afterAll(() => admin.end());

const pollIntervalMs = 500;

/** Runs `body` with a fresh errand, a worker on it (`ran`: the ids it ran, in order) and a connection of the test's own. */
async function withWorker(body: (parts: { schema: string; errand: Errand; ran: string[]; start: () => Promise<void>; other: pg.PoolClient }) => Promise<void>): Promise<void> {
  const schema = freshSchema();
  const errand = await Errand.open({ connectionString: url, schema, poolSize: 3 });
  const ran: string[] = [];
  const worker = errand.worker({ pollIntervalMs, handlers: { k: async (_: unknown, ctx) => void ran.push(ctx.id) } });
  const other = await admin.connect();
  try {
    await body({ schema, errand, ran, start: () => worker.start(), other });
  } finally {
    await other.query("ROLLBACK");
    other.release();
    await worker.stop();
    await errand.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  }
}

const statusOf = async (schema: string, ids: readonly string[]) =>
  (await admin.query<{ status: string }>(`SELECT status FROM ${schema}.jobs WHERE id = ANY($1::bigint[])`, [ids])).rows.map((r) => r.status);

describe("the claim floor, with a transaction beside the worker", () => {
  it("runs a job whose enqueue transaction began before the floor and committed after it", async () => {
    await withWorker(async ({ schema, errand, ran, start, other }) => {
      await start();
      await other.query("BEGIN");
      const { rows } = await other.query<{ id: string }>(`INSERT INTO ${schema}.jobs (kind, payload) VALUES ('k', '{}') RETURNING id::text`);
      // Older than the claim's slack: only the floor's expiry can find it.
      await eventually(async () => (await other.query(`SELECT clock_timestamp() - now() > $1 * interval '3 milliseconds' AS old`, [claimFloorSlackMs])).rows[0].old, 5_000, "the transaction to age");
      const after = await errand.enqueueMany(Array.from({ length: 3 }, () => ({ kind: "k", payload: {} })));
      await eventually(async () => (await statusOf(schema, after.map((j) => j.id))).every((s) => s === "done"), 10_000, "the jobs enqueued after it: the floor moves past it");
      await other.query("COMMIT");
      await eventually(async () => (await statusOf(schema, [rows[0]!.id]))[0] === "done", 10 * pollIntervalMs, "the late job");
      expect(ran).toEqual([...after.map((j) => j.id), rows[0]!.id]);
    });
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
});
