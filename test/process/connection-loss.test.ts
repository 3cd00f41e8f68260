import { afterEach, beforeEach, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

const JOBS = 300;
const APP = "errand-w"; // the worker's application_name (see urlNamed), so we kill only its backends

/** Terminates every backend of the worker, the LISTEN one included; returns what was cut. */
async function terminateWorkerBackends(): Promise<{ all: number; listen: number }> {
  const [row] = await t.sql<{ all: number; listen: number }>(
    `SELECT count(*)::int AS all, count(*) FILTER (WHERE query ILIKE 'LISTEN%')::int AS listen
     FROM (SELECT query, pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()) x`,
    [APP],
  );
  return row!;
}

it("survives its connections being terminated again and again, LISTEN included, and finishes every job", { timeout: 90_000 }, async () => {
  // A ten-minute poll: once the queue is empty, only a notification can wake this worker.
  const worker = t.worker("w", ["--concurrency", "5", "--lease", "5", "--rescue-interval", "1", "--poll-interval", "600"]);
  await worker.waitForLog((l) => l.event === "started", 20_000, "started");
  await t.errand.enqueueMany(Array.from({ length: JOBS }, (_, i) => ({ kind: "record", payload: { i, ms: 40 } })));

  let rounds = 0;
  let cut = 0;
  let listenCut = 0;
  const done = async () => (await t.statusCounts()).done === JOBS;
  const deadline = Date.now() + 60_000;
  while (rounds < 8 || !(await done())) {
    if (Date.now() > deadline) throw new Error(`not done after 60 s: ${JSON.stringify(await t.statusCounts())}`);
    if (worker.hasExited()) throw new Error(`the worker exited: ${JSON.stringify(await worker.exited)} ${worker.stderr().slice(-2000)}`);
    if (rounds < 8 || rounds % 4 === 0) {
      const killed = await terminateWorkerBackends();
      cut += killed.all;
      listenCut += killed.listen;
    }
    rounds++;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(cut).toBeGreaterThan(8);
  expect(listenCut).toBeGreaterThan(0);

  // Every job done, each run at least once; the worker said what happened and lived on.
  expect(await t.statusCounts()).toEqual({ done: JOBS });
  const [{ missing, duplicates }] = (await t.sql<{ missing: number; duplicates: number }>(
    `SELECT (SELECT count(*)::int FROM ${t.schema}.jobs j WHERE NOT EXISTS (SELECT 1 FROM ${t.schema}.effects e WHERE e.job_id = j.id AND e.ended_at IS NOT NULL)) AS missing,
            (SELECT count(*)::int FROM (SELECT job_id FROM ${t.schema}.effects GROUP BY job_id HAVING count(*) > 1) d) AS duplicates`,
  )) as [{ missing: number; duplicates: number }];
  expect(missing).toBe(0);
  const errors = worker.logs.filter((l) => l.event === "error");
  expect(errors.length).toBeGreaterThan(0);
  expect(errors.every((l) => typeof l.during === "string" && /terminat|connect/i.test(String(l.error)))).toBe(true);
  await worker.waitForLog((l) => l.event === "listen_restored", 10_000, "listen_restored");

  // LISTEN is back: a new job is picked up at once, not after the ten-minute poll.
  await eventually(
    async () => (await t.sql(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, [APP])).length > 0,
    10_000,
    "the LISTEN connection to come back",
  );
  const { id } = await t.errand.enqueue("record", { ms: 0 });
  await eventually(async () => (await t.job(id)).status === "done", 5_000, "the notified job to run");

  worker.child.kill("SIGTERM");
  expect(await worker.exited).toEqual({ code: 0, signal: null });
  console.log(
    `connection loss: ${JOBS} jobs, ${rounds} rounds, ${cut} backends terminated (${listenCut} LISTEN), ${errors.length} errors logged, ${duplicates} jobs ran twice`,
  );
});
