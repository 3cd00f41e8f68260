import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import { latestVersion } from "../../src/migrations/migrate.js";
import { freshSchema } from "../support/db.js";

// PostgreSQL only: several processes' worth of clients racing one migration.
const url = process.env.ERRAND_TEST_URL!;
const admin = new pg.Pool({ connectionString: url, max: 2 });
afterAll(() => admin.end());

describe("migrations", () => {
  it("apply once when five clients migrate one schema at the same moment", async () => {
    const schema = freshSchema();
    const clients = await Promise.all(Array.from({ length: 5 }, () => Errand.open({ connectionString: url, schema, poolSize: 2 })));
    try {
      const { rows } = await admin.query(`SELECT version FROM ${schema}.migrations ORDER BY version`);
      expect(rows.map((r: { version: number }) => r.version)).toEqual(Array.from({ length: latestVersion() }, (_, i) => i + 1));
      expect(await Promise.all(clients.map((c) => c.migrate()))).toEqual([[], [], [], [], []]);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });

  it("a fresh install does not wait for a long transaction elsewhere in the database", async () => {
    // CREATE INDEX CONCURRENTLY would wait for this report's snapshot to go; on a table this
    // small the migrator builds its indexes in a short transaction instead.
    const report = new pg.Client({ connectionString: url });
    await report.connect();
    const schema = freshSchema();
    try {
      await report.query("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_class");
      const errand = await Errand.open({ connectionString: url, schema, poolSize: 1 });
      await errand.close();
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_open_plain'`, [schema]);
      expect(rows[0].n).toBe(1);
    } finally {
      await report.end();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
  });

  it("uses the open-jobs partial index for the claim", async () => {
    const schema = freshSchema();
    const errand = await Errand.open({ connectionString: url, schema, poolSize: 2 });
    try {
      // Plenty of finished history and a few ready jobs: the claim must not scan history.
      await admin.query(`INSERT INTO ${schema}.jobs (kind, status, finished_at) SELECT 'old', 'done', now() FROM generate_series(1, 20000)`);
      await errand.enqueueMany(Array.from({ length: 50 }, (_, i) => ({ kind: "new", payload: { i } })));
      await admin.query(`ANALYZE ${schema}.jobs`);
      const { rows } = await admin.query(`EXPLAIN SELECT id FROM ${schema}.jobs WHERE status = 'ready' AND outcome IS NULL AND queue = 'default' AND concurrency_key IS NULL AND run_at <= now()
        ORDER BY priority DESC, run_at, id LIMIT 10 FOR UPDATE SKIP LOCKED`);
      const plan = rows.map((r: { "QUERY PLAN": string }) => r["QUERY PLAN"]).join("\n");
      expect(plan).toMatch(/Index Scan using jobs_open_plain/);
      expect(plan).not.toMatch(/Seq Scan/);
    } finally {
      await errand.close();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });
});
