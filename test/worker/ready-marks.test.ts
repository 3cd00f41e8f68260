import { expect, it } from "vitest";
import { queriesFor } from "../../src/sql/jobs.js";
import { eventually, useTestErrand } from "../support/db.js";

// The ready marks (migration 028): per queue and priority, a time below which no job is
// ready, from which the claim floor's probe reads instead of through the dead entries at the
// front of the index of open jobs. Transactions beside a raise: ready-marks.pg.test.ts.
const t = useTestErrand();

const raise = () => t.sql(`SELECT ${t.schema}.raise_ready_mark('default', 0)`);
/** The effective mark, in epoch ms (null: none), and the rows behind it. */
const mark = async () => (await t.sql<{ ms: number | null }>(`SELECT (extract(epoch FROM ${t.schema}.ready_mark('default', 0)) * 1000)::float8 AS ms`))[0]!.ms;
const firstReady = async (kinds = ["k"]) => {
  const rows = await t.sql<{ id: string }>(queriesFor(t.schema).firstReady.text, ["default", kinds, 0]);
  return rows.map((row) => String(row.id));
};
const insert = async (runAt: string, priority = 0) =>
  String((await t.sql<{ id: string }>(`INSERT INTO ${t.schema}.jobs (kind, payload, run_at, priority) VALUES ('k', '{}', ${runAt}, ${priority}) RETURNING id`))[0]!.id);
const serverNowMs = async () => (await t.sql<{ ms: number }>("SELECT (extract(epoch FROM now()) * 1000)::float8 AS ms"))[0]!.ms;

it("is raised to the first ready job of the queue and priority, any kind, and never above now() less the claim's slack", async () => {
  expect(await mark()).toBeNull();
  await raise();
  // No job at all: up to the raise's own start, less 100 ms.
  const empty = await mark();
  expect(empty).not.toBeNull();
  expect(empty!).toBeLessThanOrEqual((await serverNowMs()) - 100);

  await insert("now() - interval '2 hours'"); // another kind's below: the mark stops there too
  await t.sql(`UPDATE ${t.schema}.jobs SET kind = 'other'`);
  const mine = await insert("now() - interval '1 hour'");
  await raise();
  const [other] = await t.sql<{ ms: number }>(`SELECT (extract(epoch FROM run_at) * 1000)::float8 AS ms FROM ${t.schema}.jobs WHERE kind = 'other'`);
  expect(await mark()).toBeLessThanOrEqual(other!.ms);
  expect(await firstReady()).toEqual([mine]);
});

it("is lowered by a job written ready below it, inserted or given back, and the probe finds that job", async () => {
  await raise();
  const raised = (await mark())!;
  const late = await insert("now() - interval '1 day'");
  expect(await mark()).toBeLessThan(raised - 86_000_000);
  expect(await firstReady()).toEqual([late]);

  // A job given back (running to ready) keeps its run_at: below the mark once raised past it.
  await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', locked_by = 'w', locked_until = now() + interval '1 minute' WHERE id = $1`, [late]);
  await raise();
  expect(await mark()).toBeGreaterThan(raised - 1);
  expect(await firstReady()).toEqual([]);
  await t.sql(`UPDATE ${t.schema}.jobs SET status = 'ready', locked_by = NULL, locked_until = NULL WHERE id = $1`, [late]);
  expect(await firstReady()).toEqual([late]);
  // Raised again, it stops at that job.
  await raise();
  expect(await firstReady()).toEqual([late]);
});

it("is lowered by a job written where triggers fire only if enabled ALWAYS (logical replication's apply, a bulk load as 'replica')", async () => {
  await raise();
  const late = await t.errand.driver.transaction(async (tx) => {
    await tx.exec("SET LOCAL session_replication_role = replica");
    const { rows } = await tx.query<{ id: string }>(`INSERT INTO ${t.schema}.jobs (kind, payload, run_at) VALUES ('k', '{}', now() - interval '1 day') RETURNING id`);
    return String(rows[0]!.id);
  });
  expect(await firstReady()).toEqual([late]);
});

it("keeps one lowering row per queue and priority for a transaction outside READ COMMITTED, however many jobs it writes below the mark", async () => {
  await raise();
  const earliest = await t.errand.driver.transaction(async (tx) => {
    await tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    // One at a time, each earlier than the last (each lowers the row), then 100 at once in no order.
    for (const hours of [1, 2, 3]) await tx.query(`INSERT INTO ${t.schema}.jobs (kind, payload, run_at) VALUES ('k', '{}', now() - interval '${hours} hours')`);
    await tx.query(`INSERT INTO ${t.schema}.jobs (kind, payload, run_at) SELECT 'k', '{}', now() - ((g * 37) % 100 + 4) * interval '1 hour' FROM generate_series(1, 100) AS g`);
    await tx.query(`INSERT INTO ${t.schema}.jobs (kind, payload, run_at) VALUES ('k', '{}', now() - interval '2 hours')`);
    const { rows } = await tx.query<{ id: string }>(`SELECT id FROM ${t.schema}.jobs ORDER BY run_at, id LIMIT 1`);
    return String(rows[0]!.id);
  });
  const rows = await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.ready_marks WHERE NOT raised`);
  expect(rows[0]!.n).toBe(1);
  expect(await firstReady()).toEqual([earliest]);
});

it("reads higher and lower priorities from their start", async () => {
  await raise();
  const higher = await insert("now() - interval '1 day'", 5);
  expect(await mark()).not.toBeNull(); // that job has a priority of its own, and no mark
  expect(await firstReady()).toEqual([higher]);
  await t.sql(`DELETE FROM ${t.schema}.jobs`);
  const lower = await insert("now() - interval '1 day'", -5);
  expect(await firstReady()).toEqual([lower]);
});

it("counts a mark later than now() as none (the server's clock went back), and replaces it at the next raise", async () => {
  await raise();
  await t.sql(`UPDATE ${t.schema}.ready_marks SET run_at = now() + interval '1 hour'`);
  expect(await mark()).toBeNull();
  const id = await insert("now()");
  expect(await firstReady()).toEqual([id]);
  await raise();
  expect(await mark()).toBeLessThanOrEqual(await serverNowMs());
  expect(await firstReady()).toEqual([id]);
});

it("lets the probe skip the dead entries below it", async () => {
  // 5,000 jobs that left 'ready' (deleted, as a completion moves them), their entries still in the index.
  await t.sql(`INSERT INTO ${t.schema}.jobs (kind, payload, run_at) SELECT 'k', '{}', now() - g * interval '1 second' FROM generate_series(1, 5000) AS g`);
  await t.sql(`DELETE FROM ${t.schema}.jobs`);
  const id = await insert("now()");
  const buffers = async () => {
    const plan = await t.sql<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${queriesFor(t.schema).firstReady.text.replace(/\$1/g, "'default'").replace(/\$2/g, "'{k}'").replace(/\$3/g, "0")}`);
    const line = plan.map((row) => row["QUERY PLAN"]).find((text) => /Buffers:/.test(text)) ?? "";
    return [...line.matchAll(/=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
  };
  const fromStart = await buffers();
  expect(await firstReady()).toEqual([id]);
  await raise();
  const fromMark = await buffers();
  expect(await firstReady()).toEqual([id]);
  expect(fromStart).toBeGreaterThan(20);
  expect(fromMark).toBeLessThan(fromStart / 4);
});

it("is raised by a working worker's probes", async () => {
  const worker = t.errand.worker({ pollIntervalMs: 50, handlers: { k: async () => {} } });
  await worker.start();
  try {
    // Claims go on from the floor; a probe goes out with a claim a poll interval after the last look.
    await eventually(async () => {
      await t.errand.enqueue("k", {});
      return (await mark()) !== null;
    }, 10_000, "a probe to raise the mark");
    expect(await mark()).not.toBeNull();
  } finally {
    await worker.stop();
  }
});
