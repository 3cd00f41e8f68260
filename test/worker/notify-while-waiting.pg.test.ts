import { expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import type { Driver, Statement } from "../../src/driver/types.js";
import { workerQueriesFor } from "../../src/sql/workers.js";
import { busyWorker } from "../support/busy-worker.js";
import { eventually, useTestErrand } from "../support/db.js";

// PostgreSQL only: the transaction held open here would hold PGlite's one connection.
const t = useTestErrand();

/**
 * Runs `sql` (an INSERT … RETURNING id) in a transaction held open until `release()`:
 * `began` resolves with the row's id and the transaction's id once the insert is done.
 */
function hold(sql: string): { began: Promise<{ id: string; xid: string }>; release: () => void; done: Promise<void> } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let began!: (row: { id: string; xid: string }) => void;
  const row = new Promise<{ id: string; xid: string }>((resolve) => (began = resolve));
  const done = t.inTransaction(async (client) => {
    const { rows } = await client.query<{ id: string }>(sql);
    const { rows: xids } = await client.query<{ xid: string }>("SELECT pg_current_xact_id()::text AS xid");
    began({ id: String(rows[0]!.id), xid: xids[0]!.xid });
    await released;
  });
  return { began: row, release, done };
}

it("a worker that starts waiting again claims a job whose insert went unannounced once its transaction commits", async () => {
  // The job's trigger looked while the worker was busy (no notice), and its transaction
  // commits after the worker found its queue empty, said it waits and claimed again. Only
  // the worker's watch on the transactions in flight then (src/worker/waiting.ts) can find
  // it: the worker's poll is ten minutes.
  const id = "barrier-test-worker";
  // The inserting transaction's id, once known; whether the worker's read of the
  // transactions in flight found it; whether a claim sent after that read has returned.
  const inserting: { xid?: string } = {};
  let readIt = false;
  let claimedAfter = false;
  const { inFlight } = workerQueriesFor(t.schema);
  const driver: Driver = {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      const claimAfterRead = readIt && statement.text.includes("FOR UPDATE SKIP LOCKED");
      const result = await t.errand.driver.run<Row>(statement, params);
      if (statement.name === inFlight.name && inserting.xid !== undefined && (result.rows[0] as { xids: string[] }).xids.includes(inserting.xid)) readIt = true;
      if (claimAfterRead) claimedAfter = true;
      return result;
    },
    close: async () => {},
  };
  const errand = Errand.fromDriver(driver, { schema: t.schema });
  const busy = await busyWorker(t, errand, id);
  await busy.insertUntilQuiet();

  const transaction = hold(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('quick') RETURNING id`);
  const { id: quick, xid } = await transaction.began;
  inserting.xid = xid;
  // The slot frees: the worker's claim finds nothing it can see, it says it waits, reads
  // the transactions in flight (this one among them) and claims again at once, finding
  // nothing yet. Only the end of this transaction can have it claim after that.
  busy.release();
  await eventually(() => claimedAfter, 5_000, "a claim after the worker read the transactions in flight");
  expect(await busy.waiting()).toBe(true);
  expect(busy.ran).toEqual([]);
  transaction.release();
  await transaction.done;
  await eventually(() => busy.ran.includes(quick), 5_000, "the unannounced job to run");
  await busy.worker.stop();
  await errand.close();
});

it("a worker coming to waiting watches the transactions that insert into its jobs table, not the others", async () => {
  // Only an insert into the jobs table can have gone unannounced: a transaction that
  // writes elsewhere (another table, another schema's jobs), or updates jobs without
  // inserting one (claims, completions), is not waited for, so it costs a worker coming
  // to waiting no looks and no claims.
  const reads: string[][] = [];
  const { inFlight } = workerQueriesFor(t.schema);
  const driver: Driver = {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      const result = await t.errand.driver.run<Row>(statement, params);
      if (statement.name === inFlight.name) reads.push((result.rows[0] as { xids: string[] }).xids);
      return result;
    },
    close: async () => {},
  };
  await t.sql(`CREATE TABLE ${t.schema}.elsewhere (x int)`);
  const [existing] = await t.sql<{ id: string }>(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('unhandled') RETURNING id`);
  const jobs = hold(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('unhandled') RETURNING id`);
  const other = hold(`INSERT INTO ${t.schema}.elsewhere VALUES (1) RETURNING x AS id`);
  const update = hold(`UPDATE ${t.schema}.jobs SET priority = 1 WHERE id = ${existing!.id} RETURNING id`);
  const [{ xid: jobsXid }, { xid: otherXid }, { xid: updateXid }] = await Promise.all([jobs.began, other.began, update.began]);
  const errand = Errand.fromDriver(driver, { schema: t.schema });
  const worker = errand.worker({ pollIntervalMs: 600_000, rescueIntervalMs: 0, handlers: { ping: async () => {} } });
  try {
    await worker.start();
    await eventually(() => reads.length > 0, 5_000, "the worker's look at the transactions in flight");
    expect(reads[0]).toContain(jobsXid);
    expect(reads[0]).not.toContain(otherXid);
    expect(reads[0]).not.toContain(updateXid);
  } finally {
    jobs.release();
    other.release();
    update.release();
    await Promise.all([jobs.done, other.done, update.done]);
    await worker.stop();
    await errand.close();
  }
});
