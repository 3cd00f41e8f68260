import pg from "pg";
import { expect, it } from "vitest";
import { ownPool, pgDriver } from "../../src/driver/pg.js";
import { Errand } from "../../src/index.js";
import { statement } from "../../src/sql/statement.js";
import { eventually, useTestErrand } from "../support/db.js";

// PostgreSQL only: the embedded database has one connection whatever the worker does.
// An idle worker holds its listening connection only: its pool's close after their idle
// timeout, and its statements then run on the listening one (see pgDriver).
const t = useTestErrand();

it("an idle worker holds only its listening connection, and runs a job without opening another", async () => {
  // A short idle timeout, so the test need not wait the default 10 s for the pool to empty.
  const pool = new pg.Pool({ connectionString: process.env.ERRAND_TEST_URL, max: 4, idleTimeoutMillis: 100 });
  let opened = 0;
  pool.on("connect", () => void opened++);
  const errand = await Errand.open({ db: pool, schema: t.schema });
  const ran: string[] = [];
  const worker = errand.worker({ handlers: { ping: async (_payload, ctx) => void ran.push(ctx.id) } });
  try {
    await worker.start();
    await eventually(() => pool.totalCount === 0, 10_000, "the pool's start-up connections to close");
    const before = opened;
    const { id } = await t.errand.enqueue("ping", {});
    await eventually(() => ran.includes(id), 10_000, "the job to run");
    // Its claim and its completion ran on the listening connection.
    await eventually(async () => (await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs`))[0]?.status === "done", 10_000, "the job's outcome to be written");
    expect(opened).toBe(before);
  } finally {
    await worker.stop();
    await errand.close();
    await pool.end();
  }
});

it("statements on the listening connection when listening stops end before it closes", async () => {
  const pool = new pg.Pool({ connectionString: process.env.ERRAND_TEST_URL, max: 4 });
  const driver = pgDriver(pool, true);
  const holder = new pg.Client({ connectionString: process.env.ERRAND_TEST_URL });
  await holder.connect();
  const key = 4_101_975;
  try {
    const unlisten = await driver.listen(`errand_test_${t.schema}`, () => {});
    expect(pool.totalCount).toBe(0); // so both statements below run on the listening connection
    await holder.query("SELECT pg_advisory_lock($1)", [key]);
    // The first waits for the lock; the second is queued behind it on the same connection.
    const first = driver.run<{ ok: boolean }>(statement(`SELECT pg_advisory_lock_shared(${key}) IS NOT NULL AS ok`), []);
    const second = driver.run<{ ok: boolean }>(statement("SELECT true AS ok"), []);
    await eventually(async () => (await holder.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted", [key])).rowCount === 1, 10_000, "the first statement to wait for the lock");
    const stopped = unlisten();
    await holder.query("SELECT pg_advisory_unlock($1)", [key]);
    // Before the fix: the second failed with "Client was closed and is not queryable".
    expect([(await first).rows, (await second).rows]).toEqual([[{ ok: true }], [{ ok: true }]]);
    await stopped;
    expect(pool.totalCount).toBe(0);
  } finally {
    await holder.end();
    await driver.close();
  }
});

it("the listening connection plans each statement once, generically", async () => {
  const pool = new pg.Pool({ connectionString: process.env.ERRAND_TEST_URL, max: 4 });
  const driver = pgDriver(pool, true);
  try {
    const unlisten = await driver.listen(`errand_test_${t.schema}`, () => {});
    expect(pool.totalCount).toBe(0); // so every statement below runs on the listening connection
    const probe = statement(`SELECT count(*) AS n FROM ${t.schema}.jobs WHERE queue = $1::text AND status = 'ready'`);
    for (let i = 0; i < 3; i++) await driver.run(probe, ["default"]);
    // PostgreSQL's default makes five custom plans before it weighs a generic one.
    const { rows } = await driver.run<{ generic_plans: string; custom_plans: string }>(
      statement("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1"),
      [probe.name],
    );
    expect(rows.map((r) => [Number(r.generic_plans), Number(r.custom_plans)])).toEqual([[3, 0]]);
    await unlisten();
    expect(pool.totalCount).toBe(0);
  } finally {
    await driver.close();
  }
});

it("the connections errand opens compile no plan with JIT; a pool of the application's keeps its own setting", async () => {
  const showJit = statement("SHOW jit");
  const jitOf = async (driver: ReturnType<typeof pgDriver>) => (await driver.run<{ jit: string }>(showJit, [])).rows[0]!.jit;
  const own = ownPool({ connectionString: process.env.ERRAND_TEST_URL, max: 1 });
  const given = new pg.Pool({ connectionString: process.env.ERRAND_TEST_URL, max: 1 });
  const drivers = [pgDriver(own, true), pgDriver(given, false)] as const;
  try {
    // No pool connection yet: the statement runs on the listening connection, errand's either way.
    for (const driver of drivers) {
      const stop = await driver.listen("errand_jit_test", () => {});
      expect(await jitOf(driver)).toBe("off");
      await stop();
    }
    expect(await jitOf(drivers[0])).toBe("off");
    const serverDefault = (await given.query<{ jit: string }>("SHOW jit")).rows[0]!.jit; // "on" on PostgreSQL 15
    expect(await jitOf(drivers[1])).toBe(serverDefault);
  } finally {
    await drivers[0].close();
    await drivers[1].close();
    await given.end();
  }
});
