import { describe, expect, it } from "vitest";
import { Rescuer, sweepEvery } from "../../src/maintenance/rescuer.js";
import { queriesFor } from "../../src/sql/jobs.js";
import { eventually, useTestErrand } from "../support/db.js";

// Migration 021: the rescuer finds expired leases through the lease records the claims and
// heartbeats write (no index of jobs names locked_until any more), and now and then through
// every running job, for the jobs claimed by workers that keep no records.
const t = useTestErrand();

const records = () => t.sql<{ worker: string; ids: string[]; due: boolean }>(`SELECT worker, ids::text[], locked_until < now() AS due FROM ${t.schema}.leases ORDER BY id`);
const statuses = async () => Object.fromEntries((await t.sql<{ id: string; status: string }>(`SELECT id::text, status FROM ${t.schema}.jobs`)).map((r) => [r.id, r.status]));

describe("lease records", () => {
  it("lead the rescuer to the jobs whose lease ran out; the others of the batch are recorded again", async () => {
    const jobs = await t.errand.enqueueMany([
      { kind: "short", payload: {} },
      { kind: "long", payload: {} },
      { kind: "long", payload: {} },
    ]);
    // One claim of the three, leased for 1 minute (short) and 1 hour (long): one record, due with the earliest.
    const claimed = await t.sql(queriesFor(t.schema).claim.text, [10, "w", JSON.stringify({ long: 3_600_000 }), 60_000, 10, "default", ["short", "long"]]);
    expect(claimed).toHaveLength(3);
    expect(await records()).toEqual([{ worker: "w", ids: jobs.map((j) => j.id), due: false }]);

    // Two minutes later (SQL time travel): the short job's lease ran out, and so is the record due.
    await t.sql(`UPDATE ${t.schema}.jobs SET locked_until = locked_until - interval '2 minutes', run_at = run_at - interval '2 minutes'`);
    await t.sql(`UPDATE ${t.schema}.leases SET locked_until = locked_until - interval '2 minutes'`);
    const rescuer = t.errand.rescuer();
    await rescuer.runOnce(); // the first run also sweeps: nothing more to find
    expect(await statuses()).toEqual({ [jobs[0]!.id]: "ready", [jobs[1]!.id]: "running", [jobs[2]!.id]: "running" });
    expect(await records()).toEqual([{ worker: "w", ids: [jobs[1]!.id, jobs[2]!.id], due: false }]);
    expect(await rescuer.runOnce()).toEqual({ ready: 0, dead: 0 });
  });

  it(`are not kept by workers that claim in plain SQL: a sweep every ${sweepEvery} runs finds their jobs`, async () => {
    const [job] = await t.errand.enqueueMany([{ kind: "k", payload: {} }]);
    const rescuer = t.errand.rescuer();
    expect(await rescuer.runOnce()).toEqual({ ready: 0, dead: 0 }); // the first run, a sweep
    // The seed's claim, by a worker of the user's own that then died.
    await t.sql(
      `UPDATE ${t.schema}.jobs SET status = 'running', attempts = attempts + 1, locked_until = now() - interval '1 minute', started_at = now()
       WHERE id IN (SELECT id FROM ${t.schema}.jobs WHERE status = 'ready' AND run_at <= now() ORDER BY priority DESC, run_at, id LIMIT 10 FOR UPDATE SKIP LOCKED)`,
    );
    for (let run = 1; run < sweepEvery; run++) expect(await rescuer.runOnce()).toEqual({ ready: 0, dead: 0 });
    expect(await rescuer.runOnce()).toEqual({ ready: 1, dead: 0 });
    expect(await statuses()).toEqual({ [job!.id]: "ready" });
  });

  it("are swept by a worker's timed rescuer first at its second run, not beside the claim floor's first look at start", async () => {
    const [job] = await t.errand.enqueueMany([{ kind: "k", payload: {} }]);
    await t.sql(
      `UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, locked_until = now() - interval '1 minute', started_at = now() WHERE id = $1`,
      [job!.id],
    );
    // As the worker builds it (src/worker/worker.ts); a day's interval: only the runs below happen.
    const rescuer = new Rescuer(t.errand.driver, t.schema, { intervalMs: 86_400_000 }, false);
    await rescuer.start(); // resolves after the run at start: records only
    try {
      expect(await statuses()).toEqual({ [job!.id]: "running" });
      expect(await rescuer.runOnce()).toEqual({ ready: 1, dead: 0 }); // the second run sweeps
    } finally {
      await rescuer.stop();
    }
  });

  it("keep a big batch's ids uncompressed (migration 024); a record compressed before it still leads the rescuer", async () => {
    const jobs = await t.errand.enqueueMany(Array.from({ length: 1000 }, () => ({ kind: "k", payload: {} })));
    const claimed = await t.sql(queriesFor(t.schema).claim.text, [1000, "w", "{}", 60_000, 1000, "default", ["k"]]);
    expect(claimed).toHaveLength(1000);
    const stored = () => t.sql<{ n: number; compression: string | null }>(`SELECT cardinality(ids) AS n, pg_column_compression(ids) AS compression FROM ${t.schema}.leases`);
    // 8 kB of ids, past the size PostgreSQL compresses at: stored as they are.
    expect(await stored()).toEqual([{ n: 1000, compression: null }]);

    // As a claim before the migration wrote it: the same ids, compressed.
    await t.sql(`ALTER TABLE ${t.schema}.leases ALTER COLUMN ids SET STORAGE EXTENDED`);
    await t.sql(`UPDATE ${t.schema}.leases SET ids = ARRAY(SELECT unnest(ids))`);
    await t.sql(`ALTER TABLE ${t.schema}.leases ALTER COLUMN ids SET STORAGE EXTERNAL`);
    expect(await stored()).toEqual([{ n: 1000, compression: "pglz" }]);

    const rescuer = t.errand.rescuer();
    expect(await rescuer.runOnce()).toEqual({ ready: 0, dead: 0 }); // the first run, a sweep: the next ones read records only
    // Two minutes later (SQL time travel) every lease ran out: the record leads the rescuer to all of them.
    await t.sql(`UPDATE ${t.schema}.jobs SET locked_until = locked_until - interval '2 minutes'`);
    await t.sql(`UPDATE ${t.schema}.leases SET locked_until = locked_until - interval '2 minutes'`);
    expect(await rescuer.runOnce()).toEqual({ ready: 1000, dead: 0 });
    expect(Object.values(await statuses())).toEqual(jobs.map(() => "ready"));
  });

  it("of a worker are replaced by each heartbeat with one of the jobs it holds, and gone when it holds none", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const worker = t.errand.worker({ concurrency: 3, leaseMs: 10_000, heartbeatIntervalMs: 50, rescueIntervalMs: 0, handlers: { k: () => gate } });
    const jobs = await t.errand.enqueueMany(Array.from({ length: 3 }, () => ({ kind: "k", payload: {} })));
    await worker.start();
    try {
      const held = jobs.map((j) => j.id).sort();
      // Beats go on: one record, of the three jobs, the claims' records replaced.
      await eventually(async () => {
        const now = await records();
        return now.length === 1 && [...now[0]!.ids].sort().join() === held.join();
      }, 10_000, "one record of the held jobs");
      release();
      await eventually(async () => (await records()).length === 0, 10_000, "no record once the jobs are done");
    } finally {
      release();
      await worker.stop();
    }
  });
});
