import { expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import type { Driver, Statement } from "../../src/driver/types.js";
import { workerQueriesFor } from "../../src/sql/workers.js";
import { eventually, useTestErrand } from "../support/db.js";

// PostgreSQL only: the transaction held open here would hold PGlite's one connection.
const t = useTestErrand();

it("a worker that starts waiting again claims a job whose insert went unannounced once its transaction commits", async () => {
  // The job's trigger looked while the worker was busy (no notice), and its transaction
  // commits after the worker found its queue empty and said it waits. Only the worker's
  // watch on the transactions in flight then (src/worker/waiting.ts) can find it: the
  // worker's poll is ten minutes.
  const id = "barrier-test-worker";
  let watched = false;
  const stillInFlight: Statement = workerQueriesFor(t.schema).stillInFlight;
  const driver: Driver = {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      if (statement.name === stillInFlight.name) watched = true;
      return await t.errand.driver.run<Row>(statement, params);
    },
    close: async () => {},
  };
  const errand = Errand.fromDriver(driver, { schema: t.schema });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const ran: string[] = [];
  const worker = errand.worker({
    workerId: id,
    concurrency: 1,
    prefetch: 0,
    pollIntervalMs: 600_000,
    rescueIntervalMs: 0,
    handlers: { slow: () => gate, quick: async (_payload, ctx) => void ran.push(ctx.id) },
  });
  const waiting = async () => (await t.sql<{ waiting: boolean }>(`SELECT waiting FROM ${t.schema}.workers WHERE id = $1`, [id]))[0]?.waiting;
  await worker.start();
  await t.errand.enqueue("slow", {});
  await eventually(() => worker.activeCount === 1, 5_000, "the slow job running");
  // Busy while inserts notify often (jobs of a kind it does not run): it stops waiting.
  await eventually(
    async () => {
      for (let i = 0; i < 10; i++) await t.sql(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('elsewhere')`);
      return (await waiting()) === false;
    },
    10_000,
    "the busy worker to stop waiting",
  );

  let commit!: () => void;
  const committing = new Promise<void>((resolve) => (commit = resolve));
  let inserted!: (id: string) => void;
  const insert = new Promise<string>((resolve) => (inserted = resolve));
  const transaction = t.inTransaction(async (client) => {
    const { rows } = await client.query<{ id: string }>(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('quick') RETURNING id`);
    inserted(String(rows[0]!.id));
    await committing;
  });
  const quick = await insert;
  // The slot frees: the worker's claim finds nothing it can see, it says it waits, and
  // watches the transactions in flight then, this one among them.
  release();
  await eventually(() => watched, 5_000, "the worker to watch the transactions in flight");
  expect(await waiting()).toBe(true);
  expect(ran).toEqual([]);
  commit();
  await transaction;
  await eventually(() => ran.includes(quick), 5_000, "the unannounced job to run");
  await worker.stop();
  await errand.close();
});
