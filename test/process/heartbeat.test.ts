import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

const SHORT_LEASE = ["--lease", "2", "--rescue-interval", "0.2", "--poll-interval", "0.2"];
const lockedUntil = async (id: string) =>
  (await t.sql<{ ms: number }>(`SELECT extract(epoch FROM locked_until)::float8 * 1000 AS ms FROM ${t.schema}.all_jobs WHERE id = $1`, [id]))[0]!.ms;

describe("leases and heartbeats", () => {
  it("keeps the lease of a job three times longer than its lease, which runs exactly once", { timeout: 60_000 }, async () => {
    const { id } = await t.errand.enqueue("record", { ms: 6000 });
    // Two workers, both rescuing every 200 ms: a lapse of the 2 s lease would hand the job to the other.
    const a = t.worker("a", SHORT_LEASE);
    const b = t.worker("b", SHORT_LEASE);
    await t.started(id, a);
    const first = await lockedUntil(id);
    await eventually(async () => (await lockedUntil(id)) > first + 2000, 8_000, "the lease to be extended past its first expiry");
    await eventually(async () => (await t.job(id)).status === "done", 15_000, "the job to finish");
    const effects = await t.effects(id);
    expect(effects).toHaveLength(1);
    expect(effects[0]!.ended_at!.getTime() - effects[0]!.started_at.getTime()).toBeGreaterThanOrEqual(5_900);
    expect(await t.job(id)).toMatchObject({ status: "done", attempts: 1, last_error: null, errors: [] });
    for (const w of [a, b]) expect(w.logs.filter((l) => l.event === "rescued" || l.event === "lease_lost")).toEqual([]);
  });

  it("aborts the handler when a heartbeat finds the lease taken, and does not record its late result", { timeout: 60_000 }, async () => {
    const { id } = await t.errand.enqueue("polite", { ms: 20_000 });
    const worker = t.worker("w", ["--lease", "2"]);
    await t.started(id, worker);
    // Another owner takes the job over (as a rescuer would after an expiry).
    await t.sql(`UPDATE ${t.schema}.jobs SET locked_by = 'intruder', locked_until = now() + interval '1 minute' WHERE id = $1`, [id]);
    const effect = await eventually(async () => {
      const effects = await t.effects(id);
      return effects[0]?.ended_at ? effects[0] : undefined;
    }, 5_000, "the handler to stop");
    expect(effect!.note).toMatch(/^aborted: the lease on job \d+ was lost/);
    await worker.waitForLog((l) => l.event === "lease_lost" && (l.jobIds as string[]).includes(id), 5_000, "lease_lost");
    // The handler threw (aborted), but no failure was written: the job is the intruder's.
    expect(await t.job(id)).toMatchObject({ status: "running", attempts: 1, last_error: null, errors: [] });
    expect((await t.sql<{ locked_by: string }>(`SELECT locked_by FROM ${t.schema}.all_jobs WHERE id = $1`, [id]))[0]!.locked_by).toBe("intruder");
  });

  it("aborts the handler of a worker that cannot extend its lease before anyone else may take the job", { timeout: 60_000 }, async () => {
    // Every lease extension of the first attempt loses its connection (a network partition
    // between this worker and the database, as far as heartbeats go).
    await t.dropHeartbeats("NEW.attempts = 1");
    const { id } = await t.errand.enqueue("polite", { ms: 4_000 });
    const worker = t.worker("w", SHORT_LEASE);
    await eventually(async () => (await t.job(id)).status === "done", 30_000, "the job to be done");
    const [first, second] = await t.effects(id);
    expect(first).toMatchObject({ attempt: 1 });
    expect(first!.note).toMatch(/^aborted: the lease on job \d+ could not be extended in time/);
    expect(second).toMatchObject({ attempt: 2, note: null });
    // The first run stopped before the second began: never two at once.
    expect(first!.ended_at!.getTime()).toBeLessThanOrEqual(second!.started_at.getTime());
    expect(worker.logs.some((l) => l.event === "error" && l.during === "heartbeat")).toBe(true);
    expect(await t.job(id)).toMatchObject({ status: "done", attempts: 2, last_error: null });
  });
});
