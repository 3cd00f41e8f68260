import { afterEach, beforeEach, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
/** The worker's application_name (see spawnWorker), so the test kills only its backends. */
const app = () => `errand-w-${t.schema}`;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

const JOBS = 300;
const ROUNDS = 8;

/** Terminates every backend of the worker, the LISTEN one included, and waits until they are gone; returns how many. */
async function terminateWorkerBackends(): Promise<number> {
  const [row] = await t.sql<{ all: number }>(
    `SELECT count(*)::int AS all FROM (SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()) x`,
    [app()],
  );
  return row!.all;
}

it("survives its connections being terminated again and again, LISTEN included, and finishes every job", { timeout: 90_000 }, async () => {
  // A ten-minute poll: once the queue is empty, only a notification can wake this worker.
  const worker = t.worker("w", ["--concurrency", "5", "--lease", "5", "--rescue-interval", "1", "--poll-interval", "600"]);
  await worker.waitForLog((l) => l.event === "started", 20_000, "started");
  await t.errand.enqueueMany(Array.from({ length: JOBS }, (_, i) => ({ kind: "record", payload: { i, ms: 40 } })));
  const doneCount = async () => (await t.statusCounts()).done ?? 0;
  const alive = () => {
    if (worker.hasExited()) throw new Error(`the worker exited: ${worker.stderr().slice(-2000)}`);
  };

  // Each round cuts everything once the worker is listening again and has finished a job
  // since the last cut: every round lands on a worker that recovered, whatever the timing.
  // The LISTEN connection is one of the worker's backends (an idle worker also runs its
  // polls on it, so its last query is not always LISTEN): it is listening again when it
  // has logged LISTEN restored once per cut so far, and each cut then ends a LISTEN.
  const restored = () => worker.logs.filter((l) => l.event === "listen_restored").length;
  let cut = 0;
  let done = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const last = done;
    done = await eventually(
      async () => {
        alive();
        const now = await doneCount();
        // Progress since the last cut, unless every job is already done (a slow round can
        // outlast the work): then the cut still lands on a listening worker.
        return (now > last || now === JOBS) && restored() >= round - 1 ? now : 0;
      },
      20_000,
      `progress and LISTEN before cut ${round}`,
    );
    cut += await terminateWorkerBackends();
  }
  await eventually(
    async () => {
      alive();
      return (await doneCount()) === JOBS;
    },
    60_000,
    `all ${JOBS} jobs done`,
  );

  // Every job done, each run at least once; the worker said what happened and lived on.
  expect(await t.statusCounts()).toEqual({ done: JOBS });
  const [{ missing, duplicates }] = (await t.sql<{ missing: number; duplicates: number }>(
    `SELECT (SELECT count(*)::int FROM ${t.schema}.all_jobs j WHERE NOT EXISTS (SELECT 1 FROM ${t.schema}.effects e WHERE e.job_id = j.id AND e.ended_at IS NOT NULL)) AS missing,
            (SELECT count(*)::int FROM (SELECT job_id FROM ${t.schema}.effects GROUP BY job_id HAVING count(*) > 1) d) AS duplicates`,
  )) as [{ missing: number; duplicates: number }];
  expect(missing).toBe(0);
  // A cut lands on idle connections (logged as connection_error) or on running statements
  // (logged as error, naming what was being done); which, depends on timing. Each cut of
  // the LISTEN connection is reported, and every error is the termination: the server's
  // message, or the socket's reset when the cut came while a statement was being sent (CI
  // saw "read ECONNRESET" during a completion).
  const errors = worker.logs.filter((l) => l.event === "error");
  const reported = worker.logs.filter((l) => l.event === "connection_error");
  expect(errors.length + reported.length).toBeGreaterThanOrEqual(ROUNDS);
  expect(errors.every((l) => typeof l.during === "string" && /terminat|connect|ECONNRESET|EPIPE/i.test(String(l.error)))).toBe(true);
  await eventually(() => restored() >= ROUNDS, 10_000, "LISTEN restored after every cut");

  // LISTEN is back: a new job is picked up at once, not after the ten-minute poll.
  const { id } = await t.errand.enqueue("record", { ms: 0 });
  await eventually(async () => (await t.job(id)).status === "done", 30_000, "the notified job to run"); // the poll would take 10 min

  worker.child.kill("SIGTERM");
  expect(await worker.exited).toEqual({ code: 0, signal: null });
  console.log(
    `connection loss: ${JOBS} jobs, ${ROUNDS} rounds, ${cut} backends terminated (LISTEN restored ${restored()} times), ${errors.length} errors and ${reported.length} connection errors logged, ${duplicates} jobs ran twice`,
  );
});
