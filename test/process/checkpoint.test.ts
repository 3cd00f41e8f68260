import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

const checkpointOf = async (id: string) =>
  (await t.sql<{ step: number | null }>(`SELECT (checkpoint ->> 'step')::int AS step FROM ${t.schema}.all_jobs WHERE id = $1`, [id]))[0]!.step;

describe("checkpoints and in-transaction completion across a SIGKILL", () => {
  it("a job resumes from its last checkpoint after its worker is SIGKILLed mid-job", { timeout: 60_000 }, async () => {
    const { id } = await t.errand.enqueue("resumable", { steps: 30, ms: 100 });
    const a = t.worker("a", ["--lease", "2", "--rescue-interval", "0"]);
    await eventually(async () => (await checkpointOf(id)) !== null && (await checkpointOf(id))! >= 5, 20_000, "checkpoint 5");
    await a.kill("SIGKILL");
    const reached = (await checkpointOf(id))!;
    expect(reached).toBeGreaterThanOrEqual(5);
    expect(reached).toBeLessThan(30);

    t.worker("b", ["--lease", "2", "--rescue-interval", "0.2"]);
    await eventually(async () => (await t.job(id)).status === "done", 30_000, "the resumed run to finish");
    expect(await t.job(id)).toMatchObject({ status: "done", attempts: 2 });
    const runs = await t.effects(id);
    expect(runs.map((r) => [r.worker, r.attempt, r.note, r.ended_at !== null])).toEqual([
      ["a", 1, "from 0", false],
      ["b", 2, `from ${reached}`, true],
    ]);
    expect(await checkpointOf(id)).toBe(30);
  });

  it("a job completed in the handler's transaction stays done, once, when the worker dies right after the commit", { timeout: 60_000 }, async () => {
    const { id } = await t.errand.enqueue("completeThenDie", {});
    const a = t.worker("a", ["--lease", "1", "--rescue-interval", "0"]);
    expect((await a.exited).signal).toBe("SIGKILL");
    // The worker never wrote its own acknowledgement: it died first.
    expect(a.logs.some((l) => l.event === "job_done")).toBe(false);
    expect(await t.job(id)).toMatchObject({ status: "done", attempts: 1 });

    // Past the lease, a worker that rescues and claims does not run it again: a job
    // enqueued after the lease ran out is done by it, and the first job still ran once.
    await eventually(async () => (await t.sql(`SELECT 1 FROM ${t.schema}.all_jobs WHERE id = $1 AND finished_at < now() - interval '1.5 seconds'`, [id])).length > 0, 10_000, "the lease to run out");
    const b = t.worker("b", ["--lease", "1", "--rescue-interval", "0.2"]);
    await b.waitForLog((l) => l.event === "started", 15_000, "worker b to start");
    const later = await t.errand.enqueue("record", { ms: 0 });
    await eventually(async () => (await t.job(later.id)).status === "done", 15_000, "worker b to run a later job");
    expect(await t.job(id)).toMatchObject({ status: "done", attempts: 1, last_error: null, errors: [] });
    expect((await t.effects(id)).map((e) => [e.worker, e.note])).toEqual([["a", "in transaction"]]);
  });
});
