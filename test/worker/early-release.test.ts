import { describe, expect, it } from "vitest";
import { ErrandError, type WorkerEvent } from "../../src/index.js";
import type { Driver, Statement } from "../../src/driver/types.js";
import { queriesFor } from "../../src/sql/jobs.js";
import { workerQueriesFor } from "../../src/sql/workers.js";
import { Worker } from "../../src/worker/worker.js";
import { eventually, useTestErrand } from "../support/db.js";

// Migration 031: a dead worker's reserved jobs (claimed ahead, never started) come back once
// its row in the workers table is a minute old, not after their lease (5 minutes). The worker
// starts a reserved job only within 50 s of a write that found its row as it left it, so a
// live worker that merely lost the database never runs a job the rescuer returned.
const t = useTestErrand();

interface Row {
  id: string;
  status: string;
  attempts: number;
  locked_by: string | null;
  errors: { attempt: number; error: string; started?: boolean }[];
}
const rows = () => t.sql<Row>(`SELECT id::text, status, attempts, locked_by, errors FROM ${t.schema}.all_jobs j ORDER BY j.id`);
const born = async (id: string) => (await t.sql<{ born: string }>(`SELECT started_at::text AS born FROM ${t.schema}.workers WHERE id = $1`, [id]))[0]?.born;
/** SQL time travel: the worker's row was last written `seconds` earlier than it was. */
const ageRow = (id: string, seconds: number) =>
  t.sql(`UPDATE ${t.schema}.workers SET seen_at = seen_at - $2 * interval '1 second', started_at = started_at - $2 * interval '1 second' WHERE id = $1`, [id, seconds]);

describe("a stale worker's reserved jobs", () => {
  it("come back unspent once its row is a minute old; its started job keeps its lease, and its row is born again", async () => {
    const jobs = await t.errand.enqueueMany(Array.from({ length: 4 }, () => ({ kind: "k", payload: {}, maxAttempts: 1 })));
    // Worker w claims the four with a 5-minute lease: the first starts now, three are reserved.
    const claimed = await t.sql(queriesFor(t.schema).claim.text, [4, "w", "{}", 300_000, 1, "default", ["k"]]);
    expect(claimed).toHaveLength(4);
    await t.sql(`INSERT INTO ${t.schema}.workers (id, queues, kinds, early_release) VALUES ('w', '{default}', '{k}', true)`);
    // An older worker's row (no early_release) with a reservation of its own.
    const [old] = await t.errand.enqueueMany([{ kind: "k", payload: {} }]);
    await t.sql(queriesFor(t.schema).claim.text, [1, "old", "{}", 300_000, 0, "default", ["k"]]);
    await t.sql(`INSERT INTO ${t.schema}.workers (id, queues, kinds) VALUES ('old', '{default}', '{k}')`);
    const rescuer = t.errand.rescuer();

    expect(await rescuer.runOnce()).toEqual({ ready: 0, dead: 0 }); // both rows fresh
    await ageRow("w", 59);
    await ageRow("old", 61);
    expect(await rescuer.runOnce()).toEqual({ ready: 0, dead: 0 }); // w's row is 59 s old; old's allows no early release
    const before = await born("w");
    await ageRow("w", 2);
    expect(await rescuer.runOnce()).toEqual({ ready: 3, dead: 0 });

    const after = await rows();
    expect(after.map((r) => [r.status, r.attempts, r.locked_by])).toEqual([
      ["running", 1, "w"],
      ["ready", 0, null],
      ["ready", 0, null],
      ["ready", 0, null],
      ["running", 0, "old"],
    ]);
    for (const r of after.slice(1, 4)) {
      expect(r.errors).toEqual([
        expect.objectContaining({ attempt: 1, started: false, error: "worker w held the job reserved and showed no sign of life for 60 s; attempt 1 of 1 not spent" }),
      ]);
    }
    expect(old!.id).toBe(after[4]!.id);
    // w's row is born again (a live w's next write finds that), and stays stale; its started
    // job is still recorded for when its lease runs out.
    expect(await born("w")).not.toBe(before);
    expect(await t.sql(`SELECT seen_at < now() - interval '60 seconds' AS stale FROM ${t.schema}.workers WHERE id = 'w'`)).toEqual([{ stale: true }]);
    expect(await t.sql(`SELECT worker, ids::text[] FROM ${t.schema}.leases WHERE $1 = ANY(ids::text[])`, [jobs[0]!.id])).toEqual([
      { worker: "w", ids: [jobs[0]!.id] },
    ]);
    expect(await rescuer.runOnce()).toEqual({ ready: 0, dead: 0 });
  });

  it("are charged like any other after three unstarted returns", async () => {
    const [job] = await t.errand.enqueueMany([{ kind: "k", payload: {}, maxAttempts: 1 }]);
    const unstarted = Array.from({ length: 3 }, (_, i) => ({ attempt: 1, at: "2026-01-01T00:00:00Z", error: `unstarted ${i}`, started: false }));
    await t.sql(`UPDATE ${t.schema}.jobs SET errors = $1::jsonb`, [JSON.stringify(unstarted)]);
    await t.sql(queriesFor(t.schema).claim.text, [1, "w", "{}", 300_000, 0, "default", ["k"]]);
    await t.sql(`INSERT INTO ${t.schema}.workers (id, queues, kinds, early_release) VALUES ('w', '{default}', '{k}', true)`);
    await ageRow("w", 61);
    expect(await t.errand.rescuer().runOnce()).toEqual({ ready: 0, dead: 1 });
    const [row] = await rows();
    expect(row).toMatchObject({ id: job!.id, status: "dead", attempts: 1 });
    expect(row!.errors.at(-1)).toMatchObject({ attempt: 1, error: "worker w showed no sign of life for 60 s on attempt 1 of 1" });
  });
});

/**
 * The errand's driver, but the writes of the worker's row fail while `cut` is set (the worker
 * cannot reach the database for them), and so does the write of a reserved job's start while
 * `cutStarts` is.
 */
function cuttingDriver() {
  const presence = new Set([workerQueriesFor(t.schema).present.name, workerQueriesFor(t.schema).waiting.name]);
  const claims = new Set([queriesFor(t.schema).claim.name, queriesFor(t.schema).claimFrom.name]);
  let held: (() => void) | undefined;
  const state = {
    cut: false,
    cutStarts: false,
    /** While set, a claim runs but its reply waits for {@link letClaimThrough}. */
    holdClaims: false,
    claimHeld: false,
    letClaimThrough: () => held?.(),
  };
  const driver: Driver = {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      if ((state.cut && presence.has(statement.name)) || (state.cutStarts && statement.name === queriesFor(t.schema).start.name)) {
        throw Object.assign(new Error("connection terminated (test)"), { code: "57P01" });
      }
      const result = await t.errand.driver.run<Row>(statement, params);
      if (state.holdClaims && claims.has(statement.name) && result.rows.length > 0) {
        state.claimHeld = true;
        await new Promise<void>((resolve) => (held = resolve));
      }
      return result;
    },
  };
  return { driver, state };
}

/**
 * Worker A, on a clock the test moves (`time.now`) and the cutting driver: one handler slot,
 * five jobs claimed ahead, `slow` jobs that run until `release()`, and `quick` ones it records.
 */
async function startWorkerA() {
  const time = { now: 1_000_000 };
  const events: WorkerEvent[] = [];
  const { driver, state } = cuttingDriver();
  let release!: () => void;
  const slowGate = new Promise<void>((resolve) => (release = resolve));
  const ranOnA: string[] = [];
  const a = new Worker(
    driver,
    t.schema,
    t.errand.kinds,
    {
      concurrency: 1,
      prefetch: 5,
      rescueIntervalMs: 0,
      onEvent: (event) => void events.push(event),
      handlers: { slow: () => slowGate, quick: async (_: unknown, ctx) => void ranOnA.push(ctx.id) },
    },
    { now: () => time.now },
  );
  await a.start();
  return { a, time, events, state, release, ranOnA };
}

describe("a worker cut off from its row", () => {
  it("starts no reserved job once its row may be a minute old, and gives its buffer back when it finds the row born again", async () => {
    const [slow, ...quick] = await t.errand.enqueueMany([{ kind: "slow", payload: {} }, ...Array.from({ length: 5 }, () => ({ kind: "quick", payload: {} }))]);
    const { a, time, events, state, release, ranOnA } = await startWorkerA();
    const ranOnB: string[] = [];
    let b: Worker | undefined;
    try {
      await eventually(async () => (await rows()).every((r) => r.status === "running"), 10_000, "the slow job running and five reserved");

      // A cannot write its row, and 55 s pass on its clock: it may not start a reserved job.
      state.cut = true;
      time.now += 55_000;
      await eventually(() => events.some((e) => e.type === "error" && e.during === "presence"), 10_000, "a failed write of the row");
      release();
      await eventually(async () => (await rows())[0]!.status === "done", 10_000, "the slow job done");
      // Its slot was free when the slow job's outcome was queued, before that write: nothing started in it.
      expect(a.activeCount).toBe(0);
      expect(ranOnA).toEqual([]);

      // Its row a minute old, a rescuer returns the five; another worker runs them.
      await ageRow(a.id, 61);
      expect(await t.errand.rescuer().runOnce()).toEqual({ ready: 5, dead: 0 });
      b = t.errand.worker({ rescueIntervalMs: 0, handlers: { quick: async (_: unknown, ctx) => void ranOnB.push(ctx.id) } });
      await b.start();
      await eventually(async () => (await rows()).every((r) => r.status === "done"), 10_000, "the five done");

      // A reaches its row again: it finds it born again, and gives its buffer back rather than start it.
      state.cut = false;
      time.now += 16_000;
      await eventually(
        () => events.some((e) => e.type === "error" && e.error instanceof ErrandError && e.error.message.includes("went unwritten for a minute")),
        10_000,
        "A to find its row born again",
      );
      await eventually(() => events.some((e) => e.type === "lease_lost"), 10_000, "A's release of its buffer to find the five gone");
    } finally {
      await a.stop({ timeout: 5_000 });
      await b?.stop({ timeout: 5_000 });
    }
    expect(ranOnA).toEqual([]);
    expect(ranOnB.sort()).toEqual(quick.map((j) => j.id).sort());
    expect((await rows()).map((r) => [r.id, r.status, r.attempts])).toEqual([[slow!.id, "done", 1], ...quick.map((j) => [j.id, "done", 1])]);
  });

  it("gives back what a claim reserved when it found its row born again while that claim was out", async () => {
    await t.errand.enqueue("slow", {});
    const { a, time, events, state, release, ranOnA } = await startWorkerA();
    const ranOnB: string[] = [];
    let b: Worker | undefined;
    try {
      await eventually(async () => (await rows())[0]?.status === "running", 10_000, "the slow job running");
      // A's next claim reserves five jobs; its reply is held back.
      state.holdClaims = true;
      const quick = await t.errand.enqueueMany(Array.from({ length: 5 }, () => ({ kind: "quick", payload: {} })));
      await eventually(() => state.claimHeld, 10_000, "A's claim of the five");
      expect((await rows()).map((r) => r.status)).toEqual(Array.from({ length: 6 }, () => "running"));

      // A loses its row for a minute; a rescuer returns the five, and B runs them.
      state.cut = true;
      time.now += 55_000;
      await ageRow(a.id, 61);
      expect(await t.errand.rescuer().runOnce()).toEqual({ ready: 5, dead: 0 });
      b = t.errand.worker({ rescueIntervalMs: 0, handlers: { quick: async (_: unknown, ctx) => void ranOnB.push(ctx.id) } });
      await b.start();
      await eventually(async () => (await rows()).slice(1).every((r) => r.status === "done"), 10_000, "the five done");

      // A finds its row born again, then the claim's reply arrives: its five go back, unstarted,
      // even once the slow job frees the slot.
      state.cut = false;
      time.now += 16_000;
      await eventually(() => events.some((e) => e.type === "error" && e.during === "presence" && String(e.error).includes("went unwritten")), 10_000, "A to find its row born again");
      state.letClaimThrough();
      await eventually(() => events.some((e) => e.type === "lease_lost"), 10_000, "A's release of the five to find them gone");
      release();
      await eventually(async () => (await rows())[0]!.status === "done", 10_000, "the slow job done");
      expect(a.activeCount).toBe(0);
      expect(ranOnB.sort()).toEqual(quick.map((j) => j.id).sort());
    } finally {
      state.holdClaims = false;
      state.letClaimThrough();
      await a.stop({ timeout: 5_000 });
      await b?.stop({ timeout: 5_000 });
    }
    expect(ranOnA).toEqual([]);
    expect((await rows()).map((r) => [r.status, r.attempts])).toEqual(Array.from({ length: 6 }, () => ["done", 1]));
  });

  it("stops a handler it started from the buffer whose start could not be written, before the job may be returned", async () => {
    let now = 1_000_000;
    const clock = { now: () => now };
    const { driver, state } = cuttingDriver();
    const [first, second] = await t.errand.enqueueMany([
      { kind: "first", payload: {} },
      { kind: "second", payload: {} },
    ]);
    let finishFirst!: () => void;
    const firstGate = new Promise<void>((resolve) => (finishFirst = resolve));
    let reason: unknown;
    let secondStarted = false;
    const a = new Worker(
      driver,
      t.schema,
      t.errand.kinds,
      {
        concurrency: 1,
        prefetch: 1,
        rescueIntervalMs: 0,
        handlers: {
          first: () => firstGate,
          second: (_: unknown, ctx) =>
            new Promise<void>((resolve) => {
              secondStarted = true;
              ctx.signal.addEventListener("abort", () => {
                reason = ctx.signal.reason;
                resolve();
              });
            }),
        },
      },
      clock,
    );
    await a.start();
    try {
      await eventually(async () => (await rows()).every((r) => r.status === "running"), 10_000, "the first job running and the second reserved");
      // The second starts from the buffer, but its start cannot be written, nor can the worker's row.
      state.cutStarts = true;
      state.cut = true;
      finishFirst();
      await eventually(() => secondStarted, 10_000, "the second job to start");
      expect((await rows()).find((r) => r.id === second!.id)).toMatchObject({ status: "running", attempts: 0 });
      expect(reason).toBeUndefined();
      // 50 s after the worker's row was last found as it left it, its handler is stopped.
      now += 50_000;
      await eventually(() => reason !== undefined, 10_000, "the second job's handler to be stopped");
      expect(reason).toBeInstanceOf(ErrandError);
      expect((reason as ErrandError).code).toBe("lease_expired");
    } finally {
      state.cut = false;
      state.cutStarts = false;
      await a.stop({ timeout: 5_000 });
    }
    // It returned after the abort: a success is still written where the lease held (it did).
    expect((await rows()).map((r) => [r.id, r.status])).toEqual([
      [first!.id, "done"],
      [second!.id, "done"],
    ]);
  });
});
