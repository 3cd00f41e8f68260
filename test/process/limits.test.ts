import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

const ARGS = ["--concurrency", "10", "--poll-interval", "1"];

/** Jobs of `kind` with `payload`, `n` per key, enqueued 5,000 per statement. */
async function enqueue(keys: readonly string[], n: number, payload: object): Promise<void> {
  const specs = keys.flatMap((key) => Array.from({ length: n }, () => ({ kind: "record", payload, concurrencyKey: key })));
  for (let i = 0; i < specs.length; i += 5_000) await t.errand.enqueueMany(specs.slice(i, i + 5_000));
}

const doneCount = async () => Number((await t.sql<{ n: string }>(`SELECT count(*) AS n FROM ${t.schema}.all_jobs WHERE status = 'done'`))[0]!.n);

describe("limits across worker processes", () => {
  it("4 workers, 10,000 jobs over 50 keys limited to 2 each: never more than 2 of a key at once, none lost", async () => {
    await t.errand.limits.set("tenant:*", { concurrency: 2 });
    const keys = Array.from({ length: 50 }, (_, i) => `tenant:${i}`);
    await enqueue(keys, 200, { ms: 5 });
    const started = Date.now();
    for (let i = 0; i < 4; i++) t.worker(`w.${i}`, ARGS);
    await eventually(async () => (await doneCount()) === 10_000, 240_000, "10,000 jobs done");
    const seconds = (Date.now() - started) / 1000;
    // The most of a key's runs overlapping, from the recorded start and end of every run.
    const [{ most, runs, keyed }] = (await t.sql<{ most: number; runs: string; keyed: string }>(`
      WITH runs AS (
        SELECT j.concurrency_key AS key, e.started_at, e.ended_at FROM ${t.schema}.effects e JOIN ${t.schema}.jobs j ON j.id = e.job_id
      ), edges AS (
        SELECT key, started_at AS at, 1 AS delta FROM runs UNION ALL SELECT key, ended_at, -1 FROM runs
      ), levels AS (
        SELECT sum(delta) OVER (PARTITION BY key ORDER BY at, delta) AS level FROM edges
      )
      SELECT (SELECT max(level) FROM levels)::int AS most, (SELECT count(*) FROM runs) AS runs,
             (SELECT count(DISTINCT key) FROM runs) AS keyed`)) as [{ most: number; runs: string; keyed: string }];
    console.log(`per-key limit 2: 10,000 jobs in ${seconds.toFixed(1)} s (${Math.round(10_000 / seconds)} jobs/s), most of one key at once ${most}`);
    expect(most).toBe(2); // 1 would mean the limit was never reached: the test would prove nothing
    expect(Number(runs)).toBe(10_000);
    expect(Number(keyed)).toBe(50);
    expect(await t.statusCounts()).toEqual({ done: 10_000 });
    const [{ extra }] = (await t.sql<{ extra: string }>(`SELECT count(*) AS extra FROM ${t.schema}.all_jobs WHERE attempts <> 1`)) as [{ extra: string }];
    expect(Number(extra)).toBe(0);
  }, 300_000);

  it("a rate of 20/s across 3 workers for 10 s: no second holds more than 20 starts, throughput within 10 %, no attempt spent waiting", async () => {
    await t.errand.limits.set("api", { rate: "20/s" });
    await enqueue(["api"], 220, { ms: 1 });
    for (let i = 0; i < 3; i++) t.worker(`w.${i}`, ARGS);
    await eventually(async () => (await doneCount()) === 220, 30_000, "220 jobs done").catch(async (e: unknown) => {
      console.log(await t.sql(`SELECT status, attempts, count(*) FROM ${t.schema}.all_jobs GROUP BY 1, 2`), t.processes.map((p) => p.stderr().slice(-2000)));
      throw e;
    });
    const starts = (await t.sql<{ at: number }>(`SELECT extract(epoch FROM started_at)::float8 * 1000 AS at FROM ${t.schema}.all_jobs ORDER BY started_at`)).map((r) => Number(r.at));
    // Every window of one second that begins at a start (the fullest ones do).
    let fullest = 0;
    for (let i = 0, j = 0; i < starts.length; i++) {
      while (j < starts.length && starts[j]! < starts[i]! + 1000) j++;
      fullest = Math.max(fullest, j - i);
    }
    // After the first 20 (the first window's), the rest came at the limit's pace.
    const perSecond = (starts.length - 20) / ((starts.at(-1)! - starts[0]!) / 1000);
    console.log(`rate 20/s: fullest second ${fullest} starts, ${perSecond.toFixed(2)} starts/s over ${((starts.at(-1)! - starts[0]!) / 1000).toFixed(2)} s`);
    expect(fullest).toBe(20);
    expect(perSecond).toBeGreaterThanOrEqual(18);
    expect(perSecond).toBeLessThanOrEqual(20);
    const workers = await t.sql<{ worker: string }>(`SELECT DISTINCT worker FROM ${t.schema}.effects`);
    expect(workers.length).toBeGreaterThan(1); // the limit was shared, not one worker's
    const [{ extra }] = (await t.sql<{ extra: string }>(`SELECT count(*) AS extra FROM ${t.schema}.all_jobs WHERE attempts <> 1`)) as [{ extra: string }];
    expect(Number(extra)).toBe(0);
  }, 60_000);

  it("fairness: tenant B's 10 jobs, enqueued after tenant A's 50,000, all start within a second while A's backlog is still there", async () => {
    await enqueue(["tenant:A"], 50_000, { ms: 20 });
    for (let i = 0; i < 4; i++) t.worker(`w.${i}`, ARGS);
    await eventually(async () => (await doneCount()) > 200, 60_000, "tenant A's jobs running");
    const [{ at }] = (await t.sql<{ at: number }>(`SELECT extract(epoch FROM clock_timestamp())::float8 * 1000 AS at`)) as [{ at: number }];
    await enqueue(["tenant:B"], 10, { ms: 20 });
    await eventually(async () => Number((await t.sql<{ n: string }>(`SELECT count(*) AS n FROM ${t.schema}.all_jobs WHERE concurrency_key = 'tenant:B' AND started_at IS NOT NULL`))[0]!.n) === 10, 30_000, "B's jobs started");
    const [b] = await t.sql<{ last: number; waiting: string }>(`
      SELECT (SELECT extract(epoch FROM max(started_at))::float8 * 1000 FROM ${t.schema}.all_jobs WHERE concurrency_key = 'tenant:B') AS last,
             (SELECT count(*) FROM ${t.schema}.all_jobs WHERE concurrency_key = 'tenant:A' AND status = 'ready') AS waiting`);
    const latency = Number(b!.last) - Number(at);
    console.log(`fairness: B's 10 jobs all started ${Math.round(latency)} ms after their enqueue, with ${b!.waiting} of A's still waiting`);
    // The bound: 4 workers × 10 slots free about 2,000 slots a second (20 ms jobs); B gets every other one.
    expect(latency).toBeLessThan(1_000);
    expect(Number(b!.waiting)).toBeGreaterThan(40_000);
  }, 120_000);
});
