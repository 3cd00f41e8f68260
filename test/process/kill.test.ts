import { performance } from "node:perf_hooks";
import { afterEach, beforeEach, expect, it } from "vitest";
import { eventually, listenForNotices } from "../support/db.js";
import type { Spawned } from "../support/process.js";
import { type ProcessTest, processTest } from "./harness.js";

// The promise under test: at least once, never lost, never twice while a lease holds —
// with worker processes SIGKILLed at random while they run thousands of jobs.
const JOBS = 3000;
const WORKERS = 3;
const KILLS = 5;
const WORKER_ARGS = ["--concurrency", "10", "--lease", "2", "--rescue-interval", "0.5", "--poll-interval", "0.5", "--shutdown-timeout", "10"];
const DEADLINE_MS = 100_000;

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

const between = (min: number, max: number) => min + Math.random() * (max - min);

it("SIGKILLing random workers in the middle of their jobs loses no job and never runs one twice while its lease holds", { timeout: 115_000 }, async () => {
  const s = t.schema;
  const one = async <Row>(text: string) => (await t.sql<Row>(text))[0]!;
  await t.errand.enqueueMany(Array.from({ length: JOBS }, (_, i) => ({ kind: "record", payload: { i, ms: Math.round(between(10, 60)) } })));
  const began = performance.now();
  const generation = Array.from({ length: WORKERS }, () => 0);
  const live: Spawned[] = generation.map((_, slot) => t.worker(`w${slot + 1}.0`, WORKER_ARGS));
  const doneCount = async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.all_jobs WHERE status = 'done'`))[0]!.n;
  const noneExitedOnItsOwn = async () => {
    for (const worker of live) {
      if (worker.hasExited()) throw new Error(`${worker.name} exited on its own (${JSON.stringify(await worker.exited)}): ${worker.stderr().slice(-2000)}`);
    }
  };
  const running = async (worker: Spawned) =>
    (await t.sql(`SELECT 1 FROM ${s}.effects WHERE worker = $1 AND ended_at IS NULL LIMIT 1`, [worker.name])).length > 0;

  // Kills spread over the run by progress, not by the clock: each lands once another
  // share of the jobs is done, on a random worker caught with a handler running — so
  // every kill interrupts work, however fast or slow the machine is.
  for (let kill = 1; kill <= KILLS; kill++) {
    // The victim is drawn among the workers caught running a handler, not drawn first and
    // waited for: a worker just restarted may get no job before the queue runs dry.
    let victim: Spawned | undefined;
    await eventually(
      async () => {
        await noneExitedOnItsOwn();
        if ((await doneCount()) < (kill * JOBS) / (KILLS + 2)) return false;
        const busy: Spawned[] = [];
        for (const worker of live) if (await running(worker)) busy.push(worker);
        victim = busy[Math.floor(Math.random() * busy.length)];
        return victim !== undefined;
      },
      DEADLINE_MS / KILLS,
      `kill ${kill}: a worker running a handler after ${kill}/${KILLS + 2} of the jobs`,
    );
    if (!victim) throw new Error("unreachable: eventually returned without a victim");
    const slot = live.indexOf(victim);
    await victim.kill("SIGKILL");
    // Recorded after the exit: an upper bound on when the victim's handlers stopped.
    await t.sql(`INSERT INTO ${s}.kills (worker, killed_at) VALUES ($1, clock_timestamp())`, [victim.name]);
    live[slot] = t.worker(`w${slot + 1}.${++generation[slot]!}`, WORKER_ARGS);
  }
  await eventually(
    async () => {
      await noneExitedOnItsOwn();
      return (await doneCount()) === JOBS;
    },
    DEADLINE_MS,
    `all ${JOBS} jobs done`,
  );
  const elapsedMs = performance.now() - began;

  // Everyone still alive shuts down cleanly (once its signal handlers are installed).
  for (const worker of live) await worker.waitForLog((l) => l.event === "started", 15_000, "started");
  for (const worker of live) worker.child.kill("SIGTERM");
  for (const worker of live) expect(await worker.exited).toEqual({ code: 0, signal: null });

  // Every job done, and its effect recorded (a finished run) at least once.
  expect(await t.statusCounts()).toEqual({ done: JOBS });
  const { missing } = await one<{ missing: number }>(
    `SELECT count(*)::int AS missing FROM ${s}.all_jobs j WHERE NOT EXISTS (SELECT 1 FROM ${s}.effects e WHERE e.job_id = j.id AND e.ended_at IS NOT NULL)`,
  );
  expect(missing).toBe(0);

  // Every run either finished or belonged to a worker that was killed (which ends it).
  const { unexplained } = await one<{ unexplained: number }>(
    `SELECT count(*)::int AS unexplained FROM ${s}.effects e LEFT JOIN ${s}.kills k USING (worker) WHERE e.ended_at IS NULL AND k.worker IS NULL`,
  );
  expect(unexplained).toBe(0);

  // No two runs of one job overlap in time: a second run starts only after the first
  // ended or its worker died (and its lease ran out).
  const overlaps = await t.sql(`
    WITH runs AS (
      SELECT e.id, e.job_id, e.worker, e.started_at, coalesce(e.ended_at, k.killed_at) AS ended_at
      FROM ${s}.effects e LEFT JOIN ${s}.kills k USING (worker)
    )
    SELECT a.job_id, a.worker AS first, b.worker AS second, a.started_at, a.ended_at, b.started_at AS second_started
    FROM runs a JOIN runs b ON a.job_id = b.job_id AND a.id <> b.id
    WHERE a.started_at <= b.started_at AND b.started_at < a.ended_at`);
  expect(overlaps).toEqual([]);

  // One claim, one attempt number: an attempt number is handed to a second run only when
  // the first was a job claimed ahead whose start had not been written yet when its worker
  // was killed (it is started lazily, see docs/crash-safety.md): the rescuer returned it
  // unspent, and the job's history says so.
  const { reused } = await one<{ reused: number }>(
    `SELECT count(*)::int AS reused FROM (SELECT job_id, attempt FROM ${s}.effects GROUP BY job_id, attempt HAVING count(*) > 1) x
     JOIN ${s}.jobs j ON j.id = x.job_id
     WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(j.errors) e WHERE e ->> 'started' = 'false' AND (e ->> 'attempt')::int = x.attempt)`,
  );
  expect(reused).toBe(0);

  // Jobs that ran more than once: every earlier run belonged to a worker that was killed
  // (killed mid-run, or after the run but before its completion was written).
  const { duplicates, runs, killed_runs, unexcused, max_attempts } = await one<{
    duplicates: number;
    runs: number;
    killed_runs: number;
    unexcused: number;
    max_attempts: number;
  }>(`
    SELECT (SELECT count(*)::int FROM (SELECT job_id FROM ${s}.effects GROUP BY job_id HAVING count(*) > 1) d) AS duplicates,
           (SELECT count(*)::int FROM ${s}.effects) AS runs,
           (SELECT count(*)::int FROM ${s}.effects WHERE ended_at IS NULL) AS killed_runs,
           (SELECT count(*)::int FROM ${s}.effects e JOIN ${s}.jobs j ON j.id = e.job_id
              WHERE e.attempt <> j.attempts AND e.worker NOT IN (SELECT worker FROM ${s}.kills)) AS unexcused,
           (SELECT max(attempts)::int FROM ${s}.all_jobs) AS max_attempts`);
  expect(unexcused).toBe(0);
  expect(killed_runs).toBeGreaterThan(0); // the kills did land on running handlers

  console.log(
    `kill test: ${JOBS} jobs, ${WORKERS} workers, ${KILLS} SIGKILLs, ${runs} runs, ${duplicates} jobs ran twice or more ` +
      `(${killed_runs} runs cut short by a kill), max attempts ${max_attempts}, ${(elapsedMs / 1000).toFixed(1)} s`,
  );
});

it("a worker SIGKILLed at rest leaves its row saying it waits, which stops making inserts notify a minute after its last refresh", async () => {
  const worker = t.worker("resting");
  await worker.waitForLog((l) => l.event === "started", 15_000, "started");
  await worker.kill("SIGKILL");
  const rows = await t.sql<{ waiting: boolean }>(`SELECT waiting FROM ${t.schema}.workers`);
  expect(rows).toEqual([{ waiting: true }]);
  const { noticesOf, unlisten } = await listenForNotices(t);
  try {
    const insert = () => t.errand.enqueue("record", {});
    expect(await noticesOf(insert)).toHaveLength(1);
    // SQL time travel: a minute since its last refresh (a running worker refreshes every 15 s).
    await t.sql(`UPDATE ${t.schema}.workers SET seen_at = seen_at - interval '60 seconds'`);
    expect(await noticesOf(insert)).toEqual([]);
  } finally {
    await unlisten();
  }
});
