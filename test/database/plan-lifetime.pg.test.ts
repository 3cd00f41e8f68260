import pg from "pg";
import { afterEach, expect, it } from "vitest";
import { pgDriver } from "../../src/driver/pg.js";
import { statement } from "../../src/sql/statement.js";
import { eventually, useTestErrand } from "../support/db.js";

// PostgreSQL only: the embedded database's driver prepares no named statements.
const t = useTestErrand();

const pools: pg.Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).filter((pool) => !pool.ended).map((pool) => pool.end()));
});

/** A driver over a pool of one connection, whose plans live `planLifetimeMs`. */
function oneConnection(planLifetimeMs: number) {
  const pool = new pg.Pool({ connectionString: process.env.ERRAND_TEST_URL, max: 1 });
  pools.push(pool);
  return { pool, driver: pgDriver(pool, true, { planLifetimeMs }) };
}

/** A backlog arrives where the queue was all but empty: 100,000 jobs, in one commit. */
const backlog = (columns: string, values: string) => t.sql(`INSERT INTO ${t.schema}.jobs (${columns}) SELECT ${values} FROM generate_series(1, 100000)`);

it("a connection's plans made on a small table are made again for the table as it is, once past their lifetime", async () => {
  // The jobs table, as a worker's statements find it on an empty queue: one job.
  const [job] = await t.sql<{ id: string }>(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('k') RETURNING id`);
  const id = job!.id;
  const byIds = statement(`SELECT kind FROM ${t.schema}.jobs WHERE id = ANY($1::bigint[]) ORDER BY id`);
  /** That statement prepared and run on the one-row table until it has its generic plan. */
  const warmed = async (planLifetimeMs: number) => {
    const connection = oneConnection(planLifetimeMs);
    for (let i = 0; i < 8; i++) expect((await connection.driver.run(byIds, [[id]])).rows).toEqual([{ kind: "k" }]);
    return connection;
  };
  const planOf = async (pool: pg.Pool) => (await pool.query(`EXPLAIN EXECUTE ${byIds.name}('{${id}}')`)).rows.map((row: { "QUERY PLAN": string }) => row["QUERY PLAN"]).join("\n");
  const kept = await warmed(Infinity);
  const renewed = await warmed(0);
  expect(await planOf(kept.pool)).toMatch(/Seq Scan on jobs/); // what the plan lifetime is for
  await backlog("kind", "'b'");
  expect(await planOf(kept.pool)).toMatch(/Seq Scan on jobs/);
  expect(await planOf(renewed.pool)).toMatch(/Index (Only )?Scan using jobs_pkey/);
  expect((await renewed.driver.run(byIds, [[id]])).rows).toEqual([{ kind: "k" }]);
  await Promise.all([kept.driver.close(), renewed.driver.close()]);
});

it("a new connection's first plans are made again after a sixty-fourth of the lifetime, each next after twice as long", async () => {
  // A 6.4 s lifetime: the first plans live 100 ms, then 200, 400… A table that grows while
  // the connection is young gets plans for its size long before the lifetime is out.
  const [job] = await t.sql<{ id: string }>(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('k') RETURNING id`);
  const byIds = statement(`SELECT kind FROM ${t.schema}.jobs WHERE id = ANY($1::bigint[]) ORDER BY id`);
  const young = oneConnection(6_400);
  const started = performance.now();
  const planOf = async () => {
    expect((await young.driver.run(byIds, [[job!.id]])).rows).toEqual([{ kind: "k" }]);
    return (await young.pool.query(`EXPLAIN EXECUTE ${byIds.name}('{${job!.id}}')`)).rows.map((row: { "QUERY PLAN": string }) => row["QUERY PLAN"]).join("\n");
  };
  for (let i = 0; i < 8; i++) await planOf();
  expect(await planOf()).toMatch(/Seq Scan on jobs/);
  await backlog("kind", "'b'");
  await eventually(async () => /Index (Only )?Scan using jobs_pkey/.test(await planOf()), 10_000, "plans made for the grown table");
  // Made again before the lifetime was out: the young plans' doing, not the lifetime's.
  expect(performance.now() - started).toBeLessThan(6_400);
  await young.driver.close();
});

it("so are the plans inside the keyed claim's function", async () => {
  // claim_keyed (PL/pgSQL) keeps the plans of its statements for the session, as a prepared
  // statement does; the same DISCARD PLANS resets them.
  const claim = `SELECT count(id)::int AS claimed FROM ${t.schema}.claim_keyed(1, 'w', '{}', 60000, NULL, 'default', ARRAY['k'])`;
  /**
   * Seq scans of the jobs table by one keyed claim, on the connection's plans as they are:
   * the connection's counts not yet reported, read before and after it in one transaction.
   */
  const seqScansOfOneClaim = (driver: ReturnType<typeof pgDriver>) =>
    driver.transaction(async (tx) => {
      const seqScans = async () => (await tx.query<{ n: number }>(`SELECT seq_scan::int AS n FROM pg_stat_xact_user_tables WHERE relid = '${t.schema}.jobs'::regclass`)).rows[0]!.n;
      const before = await seqScans();
      expect((await tx.query<{ claimed: number }>(claim)).rows).toEqual([{ claimed: 1 }]);
      return (await seqScans()) - before;
    });
  /** A connection that claimed keyed jobs one at a time from a table of a few rows, until its plans are generic. */
  const warmed = async (planLifetimeMs: number) => {
    const connection = oneConnection(planLifetimeMs);
    for (let i = 0; i < 8; i++) {
      await t.sql(`INSERT INTO ${t.schema}.jobs (kind, concurrency_key) VALUES ('k', 'a')`);
      await seqScansOfOneClaim(connection.driver);
    }
    return connection;
  };
  const kept = await warmed(Infinity);
  const renewed = await warmed(0);
  await backlog("kind, concurrency_key", "'k', 'a'");
  expect(await seqScansOfOneClaim(kept.driver)).toBeGreaterThan(0); // the whole table, for one job
  expect(await seqScansOfOneClaim(renewed.driver)).toBe(0);
  await Promise.all([kept.driver.close(), renewed.driver.close()]);
});

it("the listening connection's plans made on a small table are made again on refreshPlans, not with age", async () => {
  const [job] = await t.sql<{ id: string }>(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('k') RETURNING id`);
  const byIds = statement(`SELECT kind FROM ${t.schema}.jobs WHERE id = ANY($1::bigint[]) ORDER BY id`);
  const explain = statement(`EXPLAIN EXECUTE ${byIds.name}('{${job!.id}}')`);
  /** A driver listening, its pool empty: its statements run on the listening connection. */
  const listening = async (planLifetimeMs: number) => {
    const { pool, driver } = oneConnection(planLifetimeMs);
    await driver.listen(`errand_test_${t.schema}`, () => {});
    for (let i = 0; i < 3; i++) expect((await driver.run(byIds, [[job!.id]])).rows).toEqual([{ kind: "k" }]);
    return { pool, driver, plan: async () => (await driver.run<{ "QUERY PLAN": string }>(explain, [])).rows.map((row) => row["QUERY PLAN"]).join("\n") };
  };
  // Both past any lifetime: an idle worker's timers would plan again at every statement.
  const kept = await listening(0);
  const renewed = await listening(0);
  try {
    expect(await kept.plan()).toMatch(/Seq Scan on jobs/); // the generic plan for a one-row table
    await backlog("kind", "'b'");
    expect(await kept.plan()).toMatch(/Seq Scan on jobs/);
    renewed.driver.refreshPlans?.(); // what a worker does when a backlog follows an empty queue
    expect((await renewed.driver.run(byIds, [[job!.id]])).rows).toEqual([{ kind: "k" }]);
    expect(await renewed.plan()).toMatch(/Index (Only )?Scan (using|on) jobs_pkey/);
    expect([kept.pool.totalCount, renewed.pool.totalCount]).toEqual([0, 0]);
  } finally {
    await Promise.all([kept.driver.close(), renewed.driver.close()]);
  }
});
