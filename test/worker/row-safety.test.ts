import { describe, expect, it } from "vitest";
import type { WorkerEvent } from "../../src/index.js";
import { useTestErrand } from "../support/db.js";

// One odd row — written by plain SQL, by hand, or before migration 007's checks — must
// affect only its own job: never the batch it was claimed, failed or rescued with.
const t = useTestErrand();

interface Row {
  id: string;
  status: string;
  attempts: number;
  last_error: string | null;
  errors: unknown;
  wait_s: number;
}
const rows = () =>
  t.sql<Row>(`SELECT id::text, status, attempts, last_error, errors, extract(epoch FROM run_at - now())::float8 AS wait_s FROM ${t.schema}.all_jobs j ORDER BY j.id`);
/** Rows as they were before migration 007: the test drops the check that would refuse them. */
const dropCheck = (name: string) => t.sql(`ALTER TABLE ${t.schema}.jobs DROP CONSTRAINT ${name}`);
const boom = async () => {
  throw new Error("boom");
};

describe("failure writes", () => {
  it("fill a partial retry policy from the kind's, and start a non-array errors history over, with the rest of the batch written", async () => {
    await dropCheck("jobs_errors_array");
    const jobs = await t.errand.enqueueMany(Array.from({ length: 6 }, () => ({ kind: "flaky", payload: {} })));
    await t.sql(`UPDATE ${t.schema}.jobs SET retry = '{"baseDelayMs": 1000}' WHERE id = $1`, [jobs[0]!.id]);
    await t.sql(`UPDATE ${t.schema}.jobs SET errors = '{}' WHERE id = $1`, [jobs[1]!.id]);
    const worker = t.errand.worker({ concurrency: 10, handlers: { flaky: boom } });
    expect(await worker.runOnce()).toBe(6);
    const after = await rows();
    expect(after.map((r) => [r.status, r.attempts])).toEqual(Array.from({ length: 6 }, () => ["ready", 1]));
    // baseDelayMs 1000 with the default jitter (×0.5–1.0); the others wait the default 15–30 s.
    expect(after[0]!.wait_s).toBeGreaterThan(0.4);
    expect(after[0]!.wait_s).toBeLessThanOrEqual(1);
    expect(after[2]!.wait_s).toBeGreaterThan(14);
    expect(after[1]!.errors).toEqual([expect.objectContaining({ attempt: 1, error: expect.stringContaining("boom") })]);

    // The worker goes on writing later failures.
    const { id } = await t.errand.enqueue("flaky", {});
    expect(await worker.runOnce()).toBe(1);
    expect((await t.errand.getJob(id))!).toMatchObject({ status: "ready", attempts: 1 });
  });

  for (const outcome of ["done", "failed"] as const) {
    it(`split a batch (${outcome}) whose write fails on one row, and bury that row with the reason`, async () => {
      const jobs = await t.errand.enqueueMany(Array.from({ length: 9 }, (_, i) => ({ kind: "k", payload: i === 4 ? { unrecordable: true } : {} })));
      // A rule the outcome's write breaks for one row only (a check added later, a trigger),
      // on both tables a completion may write (done jobs move to done_jobs).
      for (const table of ["jobs", "done_jobs"]) {
        await t.sql(`ALTER TABLE ${t.schema}.${table} ADD CONSTRAINT unrecordable CHECK (status NOT IN ('done', 'ready') OR NOT payload ? 'unrecordable') NOT VALID`);
      }
      const events: WorkerEvent[] = [];
      const worker = t.errand.worker({ concurrency: 10, handlers: { k: outcome === "done" ? async () => {} : boom }, onEvent: (e) => events.push(e) });
      expect(await worker.runOnce()).toBe(9);
      const after = await rows();
      const others = after.filter((r) => r.id !== jobs[4]!.id);
      expect(new Set(others.map((r) => `${r.status}/${r.attempts}`))).toEqual(new Set([outcome === "done" ? "done/1" : "ready/1"]));
      const bad = after.find((r) => r.id === jobs[4]!.id)!;
      expect(bad).toMatchObject({ status: "dead", attempts: 1 });
      expect(bad.last_error).toMatch(new RegExp(`^errand could not record this job's outcome \\(${outcome}[\\s\\S]*\\), so it was moved to dead: .*unrecordable`));
      expect(events.some((e) => e.type === "error" && String(e.error).includes(`job ${jobs[4]!.id}`))).toBe(true);
    });
  }
});

describe("claims", () => {
  it("decode each row on its own: a retry column that is not a policy fails that job alone, naming the column", async () => {
    await dropCheck("jobs_retry_object");
    const jobs = await t.errand.enqueueMany(Array.from({ length: 50 }, () => ({ kind: "k", payload: {} })));
    await t.sql(`UPDATE ${t.schema}.jobs SET retry = '"fast please"' WHERE id = $1`, [jobs[10]!.id]);
    await t.sql(`UPDATE ${t.schema}.jobs SET retry = '{"baseDelayMs": -5}' WHERE id = $1`, [jobs[20]!.id]);
    const ran: string[] = [];
    const worker = t.errand.worker({ concurrency: 50, handlers: { k: async (_: unknown, ctx) => void ran.push(ctx.id) } });
    expect(await worker.runOnce()).toBe(50);
    expect(ran).toHaveLength(48);
    expect(ran).not.toContain(jobs[10]!.id);
    const after = await rows();
    expect(after.filter((r) => r.status === "done")).toHaveLength(48);
    const [stringy, negative] = [after.find((r) => r.id === jobs[10]!.id)!, after.find((r) => r.id === jobs[20]!.id)!];
    expect(stringy).toMatchObject({ status: "dead", attempts: 1 });
    expect(stringy.last_error).toContain(`job ${jobs[10]!.id} cannot run: its retry column is not a retry policy`);
    expect(stringy.last_error).toContain('retry: must be a JSON object (got "fast please")');
    expect(negative.last_error).toContain("retry.baseDelayMs: must be a finite number ≥ 0");
  });
});

describe("the rescuer", () => {
  const expire = (where = "true") =>
    t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(), locked_by = 'gone',
             locked_until = now() - interval '1 minute' WHERE ${where}`);

  it("rescues the other expired leases when one row's errors history is not an array", async () => {
    await dropCheck("jobs_errors_array");
    const jobs = await t.errand.enqueueMany(Array.from({ length: 11 }, () => ({ kind: "k", payload: {} })));
    await expire();
    await t.sql(`UPDATE ${t.schema}.jobs SET errors = 'null' WHERE id = $1`, [jobs[0]!.id]);
    const worker = t.errand.worker({ handlers: { k: async () => {} } });
    expect(await worker.rescue()).toEqual({ ready: 11, dead: 0 });
    const after = await rows();
    expect(after.every((r) => r.status === "ready" && r.attempts === 1)).toBe(true);
    expect(after[0]!.errors).toEqual([expect.objectContaining({ attempt: 1, error: expect.stringMatching(/^lease expired on attempt 1 of 8/) })]);
  });

  it("rescues a running row that has no lease at all", async () => {
    await dropCheck("jobs_running_leased");
    const { id } = await t.errand.enqueue("k", {});
    await expire();
    await t.sql(`UPDATE ${t.schema}.jobs SET locked_until = NULL WHERE id = $1`, [id]);
    const worker = t.errand.worker({ handlers: { k: async () => {} } });
    expect(await worker.rescue()).toEqual({ ready: 1, dead: 0 });
    expect((await t.errand.getJob(id))!).toMatchObject({ status: "ready", attempts: 1, lockedUntil: null });
  });
});

describe("the schema", () => {
  it("refuses the rows that used to stop a batch, naming the check", async () => {
    const { id } = await t.errand.enqueue("k", {});
    const set = (assignment: string) => t.sql(`UPDATE ${t.schema}.jobs SET ${assignment} WHERE id = $1`, [id]);
    await expect(set(`errors = 'null'`)).rejects.toThrow(/jobs_errors_array/);
    await expect(set(`errors = '{}'`)).rejects.toThrow(/jobs_errors_array/);
    await expect(set(`retry = '"fast"'`)).rejects.toThrow(/jobs_retry_object/);
    await expect(set(`status = 'running'`)).rejects.toThrow(/jobs_running_leased/);
    // A partial policy is a legal value: the worker fills in the rest.
    await set(`retry = '{"baseDelayMs": 1000}'`);
  });
});
