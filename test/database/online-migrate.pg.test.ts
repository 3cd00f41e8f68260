import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { ErrandError } from "../../src/index.js";
import { pgDriver } from "../../src/driver/pg.js";
import { migrations } from "../../src/migrations/index.js";
import { migrate } from "../../src/migrations/migrate.js";
import { freshSchema } from "../support/db.js";

// PostgreSQL only: a lock held by another session's transaction, and a table big enough
// (8 MB) for the migrator to build its indexes CONCURRENTLY, outside any transaction.
const url = process.env.ERRAND_TEST_URL!;
const admin = new pg.Pool({ connectionString: url, max: 4 });
afterAll(() => admin.end());

const latest = migrations.length;

/** Runs `body` with a fresh schema and a driver of its own; drops the schema after. */
async function withSchema(body: (parts: { schema: string; driver: ReturnType<typeof pgDriver> }) => Promise<void>): Promise<void> {
  const schema = freshSchema();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const driver = pgDriver(pool);
  try {
    await body({ schema, driver });
  } finally {
    await driver.close();
    await pool.end();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
}

const versions = async (schema: string) =>
  (await admin.query<{ version: number }>(`SELECT version FROM ${schema}.migrations ORDER BY version`)).rows.map((row) => Number(row.version));

/** The schema's indexes: whether each is valid, and its definition. */
async function indexes(schema: string): Promise<Record<string, { valid: boolean; def: string }>> {
  const { rows } = await admin.query<{ name: string; valid: boolean; def: string }>(
    `SELECT c.relname AS name, i.indisvalid AND i.indisready AS valid, pg_get_indexdef(i.indexrelid) AS def
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relnamespace = $1::regnamespace`,
    [schema],
  );
  return Object.fromEntries(rows.map(({ name, valid, def }) => [name, { valid, def }]));
}

describe("a migration step behind a long transaction's lock", () => {
  it("gives up after its attempts with migration_lock_timeout, leaves the old version whole, and completes once the lock is gone", async () => {
    await withSchema(async ({ schema, driver }) => {
      await migrate(driver, schema, migrations.slice(0, 15));
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      try {
        // A report reading the jobs in a long transaction: its lock stops 016's ALTER TABLE.
        await holder.query(`BEGIN; SELECT count(*) FROM ${schema}.jobs`);
        // 3 attempts, not 25 (which take about 65 s): each waits its 200 ms lock_timeout,
        // then 200 ms and 400 ms between them.
        const started = performance.now();
        const error = await migrate(driver, schema, migrations, 3).then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        const tookMs = performance.now() - started;
        expect(error).toBeInstanceOf(ErrandError);
        expect((error as ErrandError).code).toBe("migration_lock_timeout");
        expect((error as ErrandError).message).toMatch(
          new RegExp(`^migration 16 \\(limits\\) of schema ${schema} could not take a lock within 200 ms, 3 times: a long transaction holds one of its tables`),
        );
        expect((error as ErrandError).message).toMatch(/nothing of it was applied/);
        expect(((error as ErrandError).cause as { code?: string }).code).toBe("55P03");
        expect(tookMs).toBeGreaterThanOrEqual(3 * 200 + 200 + 400);

        // Nothing of 016 written: still version 15, no column or table of it.
        expect(await versions(schema)).toEqual(migrations.slice(0, 15).map((m) => m.version));
        const { rows: added } = await admin.query(
          `SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'jobs' AND column_name = 'concurrency_key'
           UNION ALL SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('limits', 'queue_limits', 'workers')`,
          [schema],
        );
        expect(added).toEqual([]);
        // And the queue still moves at version 15, the report still open: no lock is left waiting.
        const { rows: [job] } = await admin.query<{ id: string }>(`INSERT INTO ${schema}.jobs (kind, payload) VALUES ('k', '{}') RETURNING id`);
        const { rows: claimed } = await admin.query(
          `UPDATE ${schema}.jobs SET status = 'running', attempts = 1, locked_until = now() + interval '1 minute', started_at = now() WHERE id = $1 RETURNING id`,
          [job!.id],
        );
        expect(claimed).toHaveLength(1);

        await holder.query("COMMIT");
        expect(await migrate(driver, schema)).toEqual(migrations.slice(15).map((m) => m.version));
        expect(await versions(schema)).toEqual(migrations.map((m) => m.version));
        expect(Object.values(await indexes(schema)).filter((index) => !index.valid)).toEqual([]);
        const { rows: [after] } = await admin.query(`SELECT status, concurrency_key FROM ${schema}.jobs WHERE id = $1`, [job!.id]);
        expect(after).toEqual({ status: "running", concurrency_key: null });
      } finally {
        await holder.query("ROLLBACK").catch(() => {});
        await holder.end();
      }
    });
  });
});

describe("a migration run on a big table", () => {
  it("drops an index a failed concurrent build left INVALID and builds it again, concurrently", async () => {
    await withSchema(async ({ schema, driver }) => {
      await migrate(driver, schema);
      const before = await indexes(schema);
      // Past the 8 MB from which the migrator builds indexes CONCURRENTLY.
      await admin.query(`INSERT INTO ${schema}.jobs (kind, payload) SELECT 'old', jsonb_build_object('pad', repeat('x', 200)) FROM generate_series(1, 30000)`);
      const { rows: [size] } = await admin.query<{ bytes: string }>(`SELECT pg_relation_size($1::regclass) AS bytes`, [`${schema}.jobs`]);
      expect(Number(size!.bytes)).toBeGreaterThanOrEqual(8 * 1024 * 1024);

      // A concurrent build that fails (here on duplicates) leaves its index behind, INVALID.
      await admin.query(`DROP INDEX ${schema}.jobs_open_plain`);
      await expect(admin.query(`CREATE UNIQUE INDEX CONCURRENTLY jobs_open_plain ON ${schema}.jobs (kind)`)).rejects.toThrow(/duplicate|unique/i);
      expect((await indexes(schema)).jobs_open_plain).toEqual({ valid: false, def: expect.stringContaining("UNIQUE") as unknown });

      expect(await migrate(driver, schema)).toEqual([]);
      expect(await indexes(schema)).toEqual(before);
      expect(await versions(schema)).toHaveLength(latest);
    });
  });
});
