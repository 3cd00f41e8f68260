import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

/** A pause must reach every worker within about a second (a notice; a poll every second covers a missed one). */
const pauseBoundMs = 1_000;

describe("pausing a queue while worker processes run it", () => {
  it("stops new starts in every worker within a second, loses nothing, charges nothing; resume drains the rest", async () => {
    const total = 300;
    const jobs = await t.errand.enqueueMany(Array.from({ length: total }, () => ({ kind: "record", queue: "work", payload: { ms: 40 } })));
    // Each worker also serves a probe queue, to show it is alive and claiming while "work" is paused.
    const workers = ["w1", "w2", "w3"].map((name) => t.worker(name, ["--queue", "work=4", "--queue", "probe=1"]));
    await eventually(async () => (await t.effects()).length >= 40, 30_000, "40 jobs started");

    await t.errand.pause({ queue: "work" });
    const [pause] = await t.sql<{ paused_at: Date }>(`SELECT paused_at FROM ${t.schema}.pauses WHERE scope = 'queue' AND name = 'work'`);
    const pausedAt = pause!.paused_at;
    // Running handlers finish; buffered jobs go back: nothing of "work" is running any more.
    await eventually(async () => ((await t.statusCounts()).running ?? 0) === 0, 15_000, "no job running or buffered");
    const probes = await t.errand.enqueueMany(["w1", "w2", "w3"].map(() => ({ kind: "record", queue: "probe", payload: { ms: 0 } })));
    await eventually(async () => (await Promise.all(probes.map((p) => t.job(p.id)))).every((j) => j.status === "done"), 15_000, "the probe jobs done");

    const effects = await t.effects();
    const work = effects.filter((e) => jobs.some((j) => j.id === e.job_id));
    const lastStartMs = Math.max(...work.map((e) => e.started_at.getTime()));
    const delayMs = lastStartMs - pausedAt.getTime();
    const startedBefore = work.length;
    console.log(`pause: ${startedBefore} of ${total} jobs started before it; last start ${delayMs} ms after the pause committed (bound ${pauseBoundMs} ms)`);
    expect(delayMs).toBeLessThan(pauseBoundMs);
    expect(startedBefore).toBeLessThan(total);
    // Nothing charged: every job not started is ready with no attempt spent.
    const counts = await t.sql<{ status: string; attempts: number; n: number }>(
      `SELECT status, attempts, count(*)::int AS n FROM ${t.schema}.all_jobs WHERE queue = 'work' GROUP BY status, attempts ORDER BY status`,
    );
    expect(counts).toEqual([
      { status: "done", attempts: 1, n: startedBefore },
      { status: "ready", attempts: 0, n: total - startedBefore },
    ]);
    expect((await t.errand.stats()).queues.work).toEqual({ ready: total - startedBefore, scheduled: 0, running: 0, paused: true, limit: null });

    await t.errand.resume({ queue: "work" });
    await eventually(async () => (await t.statusCounts()).done === total + probes.length, 30_000, "every job done after resume");
    const runs = (await t.effects()).filter((e) => jobs.some((j) => j.id === e.job_id));
    // Nothing lost, nothing run twice, every job on its first attempt.
    expect(runs).toHaveLength(total);
    expect(new Set(runs.map((e) => e.job_id)).size).toBe(total);
    expect(runs.every((e) => e.attempt === 1 && e.ended_at !== null)).toBe(true);
    // All three workers took part after the resume too.
    const resumed = runs.filter((e) => e.started_at.getTime() > lastStartMs);
    expect(new Set(resumed.map((e) => e.worker)).size).toBe(3);
    for (const worker of workers) expect(worker.hasExited()).toBe(false);
  });
});
