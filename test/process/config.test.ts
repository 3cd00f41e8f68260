import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type Spawned, databaseUrl, fixture, spawnErrand, urlNamed } from "../support/process.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

/** `errand worker --config test/process/fixtures/errand.config.js` in this test's schema. */
function configWorker(name: string): Spawned {
  const worker = spawnErrand(name, ["worker", "--database-url", urlNamed(`errand-${name}`), "--schema", t.schema, "--config", fixture("errand.config.js")], {
    EFFECTS_URL: urlNamed("errand-test-effects"),
    EFFECTS_SCHEMA: t.schema,
    WORKER_NAME: name,
  });
  t.processes.push(worker);
  return worker;
}

describe("`errand worker --config`", () => {
  it("says first which database it uses, then runs each kind with the config's backoff and lease", async () => {
    const worker = configWorker("w");
    await worker.waitForLog((l) => l.event === "started", 30_000, "the worker to start");
    const url = new URL(databaseUrl);
    expect(worker.logs[0]).toMatchObject({ event: "starting", database: `postgres://${url.hostname}:${url.port || "5432"}${url.pathname}`, schema: t.schema, config: fixture("errand.config.js") });

    // The job's attempts are the producer's choice (this test's errand knows no kinds);
    // the backoff between them is the worker's, from the config.
    const flaky = await t.errand.enqueue("flaky", {}, { maxAttempts: 2 });
    const slow = await t.errand.enqueue("slow", { ms: 60_000 });
    await eventually(async () => (await t.job(flaky.id)).status === "dead", 15_000, "the flaky job to die");
    // A dead job keeps the run_at its first failure set: failure time + backoff, in the database's clock.
    const [row] = await t.sql<{ backoff_ms: number }>(
      `SELECT (extract(epoch FROM run_at - (errors -> 0 ->> 'at')::timestamptz) * 1000)::float8 AS backoff_ms FROM ${t.schema}.all_jobs WHERE id = $1`,
      [flaky.id],
    );
    expect(row!.backoff_ms).toBeGreaterThanOrEqual(49.9); // 100 ms × jitter 0.5–1.0
    expect(row!.backoff_ms).toBeLessThanOrEqual(100.1);

    await t.started(slow.id, worker);
    const [lease] = await t.sql<{ left_ms: number }>(`SELECT (extract(epoch FROM locked_until - now()) * 1000)::float8 AS left_ms FROM ${t.schema}.all_jobs WHERE id = $1`, [slow.id]);
    // Heartbeats keep it between 60 s and 60 s less a heartbeat interval (20 s); the default lease would be 300 s.
    expect(lease!.left_ms).toBeGreaterThan(30_000);
    expect(lease!.left_ms).toBeLessThanOrEqual(60_000);
  });

  it("declares the config's schedules, whose jobs get their kind's attempts and priority", async () => {
    const worker = configWorker("w");
    expect(await worker.waitForLog((l) => l.event === "schedules_declared", 30_000, "the schedules to be declared")).toMatchObject({ schedules: ["config-nightly", "config-tick"] });
    const schedules = await t.errand.schedules.list();
    expect(schedules.map((s) => [s.name, s.cron, s.timezone, s.kind])).toEqual([
      ["config-nightly", "0 3 * * *", "Europe/Berlin", "slow"],
      ["config-tick", "* * * * * *", "UTC", "tick"],
    ]);
    const tick = await eventually(
      async () => (await t.sql<{ max_attempts: number; priority: number; dedupe_key: string }>(`SELECT max_attempts, priority, dedupe_key FROM ${t.schema}.all_jobs WHERE kind = 'tick' LIMIT 1`))[0],
      15_000,
      "the scheduler to enqueue a tick",
    );
    expect(tick).toMatchObject({ max_attempts: 4, priority: 7, dedupe_key: expect.stringMatching(/^schedule:config-tick:/) });
  });

  it("declares again at every start without disturbing a schedule: two workers at once keep its pause and next slot", async () => {
    const first = configWorker("first");
    await first.waitForLog((l) => l.event === "schedules_declared", 30_000, "the first declaration");
    await t.errand.schedules.pause("config-nightly");
    const before = (await t.errand.schedules.get("config-nightly"))!;
    expect(await first.kill("SIGTERM")).toEqual({ code: 0, signal: null });

    const again = [configWorker("second"), configWorker("third")];
    await Promise.all(again.map((w) => w.waitForLog((l) => l.event === "schedules_declared", 30_000, "the declaration")));
    const schedules = await t.errand.schedules.list();
    expect(schedules.map((s) => s.name)).toEqual(["config-nightly", "config-tick"]);
    expect(schedules[0]).toMatchObject({ paused: true, nextRun: before.nextRun, lastSlot: before.lastSlot });
  });
});
