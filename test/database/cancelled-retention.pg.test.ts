import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import { migrations } from "../../src/migrations/index.js";
import { migrate } from "../../src/migrations/migrate.js";
import { pgDriver } from "../../src/driver/pg.js";
import { freshSchema } from "../support/db.js";

// PostgreSQL only: migration 015 on a schema that already holds cancelled jobs, as an
// upgrade finds it, and with its index built beforehand by an operator.
const url = process.env.ERRAND_TEST_URL!;
const admin = new pg.Pool({ connectionString: url, max: 2 });
const driver = pgDriver(admin);
afterAll(() => admin.end());

/** A schema migrated up to (and including) `version`, as an older errand left it. */
async function schemaAt(version: number): Promise<string> {
  const schema = freshSchema();
  await migrate(driver, schema, migrations.slice(0, version));
  return schema;
}

const cancelledJobs = (schema: string) =>
  admin.query(`INSERT INTO ${schema}.jobs (kind, status, finished_at) SELECT CASE WHEN g <= 3 THEN 'a' ELSE 'b' END, 'cancelled', now() FROM generate_series(1, 5) g`);

describe("migration 015 (cancelled jobs retained and purged)", () => {
  it("counts the cancelled jobs already in the table, and the purger deletes them by age", async () => {
    const schema = await schemaAt(14);
    await cancelledJobs(schema);
    await admin.query(`INSERT INTO ${schema}.jobs (kind, status, finished_at) VALUES ('a', 'done', now())`);
    const errand = await Errand.open({ connectionString: url, schema, poolSize: 1 });
    try {
      const stats = await errand.stats();
      expect([stats.kinds.a!.cancelled, stats.kinds.b!.cancelled, stats.total.cancelled]).toEqual([3, 2, 5]);
      expect(stats.total.done).toBe(0); // plain-SQL done rows were never counted; 015 changes nothing there
      expect(await errand.purge({ olderThanMs: 0 })).toMatchObject({ cancelled: 5 });
      expect((await errand.stats()).total.cancelled).toBe(0);
    } finally {
      await errand.close();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });

  it("keeps the index when an operator built it beforehand", async () => {
    const schema = await schemaAt(14);
    await cancelledJobs(schema);
    // An operator would add CONCURRENTLY (not blocking writers); here that would wait for
    // every other test's open transaction on the server, and the result is the same index.
    await admin.query(`CREATE INDEX jobs_cancelled ON ${schema}.jobs (finished_at) WHERE status = 'cancelled'`);
    const oid = async () => (await admin.query<{ oid: string | null }>(`SELECT to_regclass('${schema}.jobs_cancelled')::oid AS oid`)).rows[0]!.oid;
    const before = await oid();
    await migrate(driver, schema, migrations.slice(0, 15));
    expect(await oid()).toBe(before);
    // Migration 020 replaces it with jobs_outcome_cancelled, and the purger finds the rows through that.
    const errand = await Errand.open({ connectionString: url, schema, poolSize: 1 });
    try {
      expect(await oid()).toBeNull();
      expect((await errand.stats()).total.cancelled).toBe(5);
      expect(await errand.purge({ olderThanMs: 0 })).toMatchObject({ cancelled: 5 });
    } finally {
      await errand.close();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });
});
