import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "../support/db.js";
import { type ProcessTest, processTest } from "./harness.js";

let t: ProcessTest;
beforeEach(async () => {
  t = await processTest();
});
afterEach(() => t.cleanup());

/**
 * Makes the write that marks a job done lose its connection (the backend terminates
 * itself mid-statement, so the client sees exactly what a network drop looks like)
 * whenever `condition` (SQL) holds: the update to done, or the delete of a running row
 * that moves it to done_jobs. Nothing else is affected: claims, heartbeats, releases and
 * rescues go through.
 */
async function dropAcknowledgements(condition: string): Promise<void> {
  await t.sql(`
    CREATE FUNCTION ${t.schema}.drop_ack() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF OLD.status = 'running' AND (CASE TG_OP WHEN 'DELETE' THEN true ELSE NEW.status = 'done' END) AND (${condition}) THEN
        PERFORM pg_terminate_backend(pg_backend_pid());
        PERFORM pg_sleep(5);
      END IF;
      RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
    END $$`);
  await t.sql(`CREATE TRIGGER drop_ack BEFORE UPDATE OR DELETE ON ${t.schema}.jobs FOR EACH ROW EXECUTE FUNCTION ${t.schema}.drop_ack()`);
}

const completeErrors = (logs: readonly Record<string, unknown>[]) => logs.filter((l) => l.event === "error" && l.during === "complete");

describe("lost acknowledgements", () => {
  it("retries a completion that could not be written, without counting a failure or running the job again", { timeout: 60_000 }, async () => {
    await t.sql(`CREATE SEQUENCE ${t.schema}.ack_drops`);
    await dropAcknowledgements(`nextval('${t.schema}.ack_drops') <= 3`);
    const { id } = await t.errand.enqueue("record", { ms: 0 });
    const worker = t.worker("w", ["--lease", "5"]);
    await eventually(async () => (await t.job(id)).status === "done", 20_000, "the job to be done");
    expect(await t.job(id)).toMatchObject({ status: "done", attempts: 1, last_error: null, errors: [] });
    expect(await t.effects(id)).toHaveLength(1);
    expect(completeErrors(worker.logs).length).toBe(3);
    expect(worker.logs.some((l) => l.event === "job_failed" || l.event === "job_dead")).toBe(false);
  });

  it("when the acknowledgement is lost for good, the job runs again after its lease: at least once", { timeout: 60_000 }, async () => {
    await t.sql(`CREATE TABLE ${t.schema}.ack_switch (refuse boolean NOT NULL); INSERT INTO ${t.schema}.ack_switch VALUES (true)`);
    await dropAcknowledgements(`(SELECT refuse FROM ${t.schema}.ack_switch)`);
    const { id } = await t.errand.enqueue("record", { ms: 0 });
    const a = t.worker("a", ["--worker-id", "worker-a", "--lease", "2", "--rescue-interval", "0", "--shutdown-timeout", "1"]);

    // The handler succeeded; the worker keeps trying to say so, and keeps the lease meanwhile.
    await eventually(async () => (await t.effects(id))[0]?.ended_at, 15_000, "the handler to succeed");
    await eventually(() => completeErrors(a.logs).length >= 2, 10_000, "completion retries");
    const [{ until: before }] = (await t.sql(`SELECT locked_until AS until FROM ${t.schema}.all_jobs WHERE id = $1`, [id])) as [{ until: Date }];
    await eventually(
      async () => ((await t.sql(`SELECT locked_until AS until FROM ${t.schema}.all_jobs WHERE id = $1`, [id])) as [{ until: Date }])[0].until > new Date(before.getTime() + 1000),
      5_000,
      "the heartbeat to extend the lease of the unacknowledged job",
    );
    // Not a failure: no error recorded, no attempt spent beyond the one that ran.
    expect(await t.job(id)).toMatchObject({ status: "running", attempts: 1, last_error: null, errors: [] });
    expect(a.logs.some((l) => l.event === "job_failed" || l.event === "job_dead")).toBe(false);

    // Shutdown tries a little longer, then gives up and exits cleanly: the outcome is lost.
    a.child.kill("SIGTERM");
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(await t.job(id)).toMatchObject({ status: "running", attempts: 1 });

    // Once the lease runs out, another worker runs the job again.
    await t.sql(`UPDATE ${t.schema}.ack_switch SET refuse = false`);
    t.worker("b", ["--lease", "2", "--rescue-interval", "0.2"]);
    await eventually(async () => (await t.job(id)).status === "done", 20_000, "the second run to finish");
    const job = await t.job(id);
    expect(job).toMatchObject({ status: "done", attempts: 2, last_error: null });
    expect(job.errors.map((e) => e.error)).toEqual([expect.stringMatching(/^lease expired on attempt 1 of 8 \(worker worker-a died or overran its lease\)$/)]);
    const effects = await t.effects(id);
    expect(effects.map((e) => [e.worker, e.attempt, e.ended_at !== null])).toEqual([
      ["a", 1, true],
      ["b", 2, true],
    ]);
  });
});
