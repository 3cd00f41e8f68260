import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import { observeQueriesFor } from "../../src/sql/observe.js";
import { freshSchema } from "../support/db.js";

// PostgreSQL only: a second connection holds rows while the purge runs. The purge deletes the
// rows it locked by their ctid (src/sql/observe.ts): its plan is a TID scan, and it must still
// pass over rows another transaction holds, without waiting for them, and delete them on a
// later run.
const url = process.env.ERRAND_TEST_URL!;
const admin = new pg.Pool({ connectionString: url, max: 2 });
afterAll(() => admin.end());

describe("purge beside a transaction that holds rows", () => {
  it("deletes by ctid the rows nobody holds, skips the held ones without waiting, and deletes those later", async () => {
    const schema = freshSchema();
    const errand = await Errand.open({ connectionString: url, schema, poolSize: 2 });
    const holder = await admin.connect();
    try {
      await admin.query(
        `INSERT INTO ${schema}.done_jobs (id, kind, payload, status, priority, attempts, max_attempts, run_at, errors, created_at, started_at, finished_at, queue)
         SELECT -g, 'old', '{}', 'done', 0, 1, 8, t, '[]', t, t, t, 'default'
         FROM generate_series(1, 2500) AS g, LATERAL (SELECT now() - interval '8 days' - g * interval '1 second' AS t) AS at`,
      );
      // The statement the purge runs, as the server caches it: the oldest rows through
      // done_jobs_finished, deleted by their ctid, never a read of the whole table.
      await holder.query("SET plan_cache_mode = force_generic_plan");
      await holder.query(`PREPARE prune AS ${observeQueriesFor(schema).pruneMoved.text}`);
      const plan = (await holder.query(`EXPLAIN EXECUTE prune(${7 * 86_400_000}, 1000)`)).rows.map((r) => Object.values(r)[0]).join("\n");
      expect(plan).toMatch(/Tid Scan on done_jobs j/);
      expect(plan).toMatch(/Index Scan using done_jobs_finished/);
      expect(plan).not.toMatch(/Seq Scan/);
      await holder.query("DEALLOCATE prune; RESET plan_cache_mode");
      await holder.query("BEGIN");
      // The oldest 300, which the purge's first batch would take first.
      await holder.query(`SELECT id FROM ${schema}.done_jobs ORDER BY finished_at LIMIT 300 FOR UPDATE`);
      const started = performance.now();
      const first = await errand.purge({ batchSize: 1000, dutyCycle: 1 });
      expect(performance.now() - started).toBeLessThan(5_000); // it did not wait for the holder
      expect(first.done).toBe(2200);
      const left = await admin.query<{ id: string }>(`SELECT id FROM ${schema}.done_jobs ORDER BY finished_at`);
      expect(left.rows).toHaveLength(300);
      await holder.query("COMMIT");
      expect((await errand.purge({ batchSize: 1000, dutyCycle: 1 })).done).toBe(300);
      expect((await admin.query(`SELECT count(*)::int AS n FROM ${schema}.done_jobs`)).rows[0].n).toBe(0);
    } finally {
      await holder.query("ROLLBACK").catch(() => {});
      holder.release();
      await errand.close();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });
});
