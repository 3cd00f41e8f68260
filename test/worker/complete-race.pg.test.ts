import pg from "pg";
import { afterAll, expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import { eventually, freshSchema } from "../support/db.js";

// PostgreSQL only: a transaction held open beside a working worker needs a second
// connection. A completion moves plain jobs to done_jobs and marks the others done in
// place (migration 018). An enqueue may release a running job's dedupe key while the
// completion runs; the job must still be recorded done, once.
const url = process.env.ERRAND_TEST_URL!;
const admin = new pg.Pool({ connectionString: url, max: 2 });
afterAll(() => admin.end());

it("records a job done whose dedupe key is released while its completion waits for the row", async () => {
  const schema = freshSchema();
  const errand = await Errand.open({ connectionString: url, schema });
  const other = await admin.connect();
  try {
    const { id } = await errand.enqueue("k", {}, { dedupeKey: "once" });
    // What an enqueue of the same key does to a job that no longer holds it, not committed yet.
    await other.query("BEGIN");
    let ran = 0;
    const worker = errand.worker({
      handlers: {
        k: async () => {
          ran++;
          await other.query(`UPDATE ${schema}.jobs SET dedupe_key = NULL WHERE id = $1`, [id]);
        },
      },
    });
    await worker.start();
    await eventually(
      async () => (await admin.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%done_jobs%'`)).rowCount === 1,
      10_000,
      "the completion to wait for the row",
    );
    await other.query("COMMIT");
    await eventually(async () => (await errand.getJob(id))?.status === "done", 10_000, "the job to be done");
    expect(await errand.getJob(id)).toMatchObject({ status: "done", attempts: 1, dedupeKey: null, lockedBy: null });
    // Marked done where it was: its delete had skipped it as keyed.
    expect((await admin.query(`SELECT status FROM ${schema}.jobs WHERE id = $1`, [id])).rows).toEqual([{ status: "done" }]);
    await worker.stop();
    expect(ran).toBe(1);
  } finally {
    await other.query("ROLLBACK").catch(() => {});
    other.release();
    await errand.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  }
});
