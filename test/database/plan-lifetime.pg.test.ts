import pg from "pg";
import { expect, it } from "vitest";
import { pgDriver } from "../../src/driver/pg.js";
import { statement } from "../../src/sql/statement.js";
import { useTestErrand } from "../support/db.js";

// PostgreSQL only: the embedded database's driver prepares no named statements.
const t = useTestErrand();

it("a connection's plans made on a small table are made again for the table as it is, once past their lifetime", async () => {
  // The jobs table, as a worker's statements find it on an empty queue: one job.
  const [job] = await t.sql<{ id: string }>(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('k') RETURNING id`);
  const id = job!.id;
  const byIds = statement(`SELECT kind FROM ${t.schema}.jobs WHERE id = ANY($1::bigint[]) ORDER BY id`);
  const pools: pg.Pool[] = [];
  /** A driver over a pool of one connection, and that statement prepared and run on the one-row table until it has its generic plan. */
  const warmed = async (planLifetimeMs: number) => {
    const pool = new pg.Pool({ connectionString: process.env.ERRAND_TEST_URL, max: 1 });
    pools.push(pool);
    const driver = pgDriver(pool, true, { planLifetimeMs });
    for (let i = 0; i < 8; i++) expect((await driver.run(byIds, [[id]])).rows).toEqual([{ kind: "k" }]);
    return { pool, driver };
  };
  const planOf = async (pool: pg.Pool) => (await pool.query(`EXPLAIN EXECUTE ${byIds.name}('{${id}}')`)).rows.map((row: { "QUERY PLAN": string }) => row["QUERY PLAN"]).join("\n");
  try {
    const kept = await warmed(Infinity);
    const renewed = await warmed(0);
    expect(await planOf(kept.pool)).toMatch(/Seq Scan on jobs/); // what the plan lifetime is for
    // A backlog arrives: 100,000 jobs.
    await t.sql(`INSERT INTO ${t.schema}.jobs (kind) SELECT 'b' FROM generate_series(1, 100000)`);
    expect(await planOf(kept.pool)).toMatch(/Seq Scan on jobs/);
    expect(await planOf(renewed.pool)).toMatch(/Index (Only )?Scan using jobs_pkey/);
    expect((await renewed.driver.run(byIds, [[id]])).rows).toEqual([{ kind: "k" }]);
    await Promise.all([kept.driver.close(), renewed.driver.close()]);
  } finally {
    await Promise.all(pools.filter((pool) => !pool.ended).map((pool) => pool.end()));
  }
});
