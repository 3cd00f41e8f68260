import { describe, expect, it } from "vitest";
import { type BatchCallbackPayload, type BatchSummary, Errand, NotFoundError, PermanentError, ValidationError, defineJobs, json } from "../../src/index.js";
import { byId, queriesFor } from "../../src/sql/jobs.js";
import { useTestErrand } from "../support/db.js";

const t = useTestErrand({ maxPayloadBytes: 1000 });

/** Rows of a table in this test's schema. */
const count = async (table: string, where = "true") => Number((await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.${table} WHERE ${where}`))[0]!.n);

/** The callback jobs enqueued so far. */
const callbacks = () => t.sql<{ id: string; payload: { batch: BatchSummary } & Record<string, unknown> }>(`SELECT id::text, payload FROM ${t.schema}.all_jobs WHERE kind = 'report' ORDER BY id`);

describe("errand.batch", () => {
  it("enqueues the members with the batch, and the callback once, when the last member finishes, with counts and failed ids", async () => {
    const { batchId, jobIds } = await t.errand.batch({
      jobs: [
        { kind: "work", payload: { n: 1 } },
        { kind: "work", payload: { n: 2 } },
        { kind: "work", payload: { n: 3, fail: true }, maxAttempts: 1 },
        { kind: "work", payload: { n: 4 } },
      ],
      then: { kind: "report", payload: { albumId: 7 }, priority: 5 },
    });
    expect(jobIds).toHaveLength(4);
    expect(await t.errand.getJob(jobIds[0]!)).toMatchObject({ batchId, kind: "work", payload: { n: 1 } });
    expect(await t.errand.getBatch(batchId)).toMatchObject({ id: batchId, status: "open", total: 4, remaining: 4, done: 0, callbackJobId: null, callback: { kind: "report", payload: { albumId: 7 } } });

    // One member is cancelled, the rest run: one fails for good.
    await t.errand.cancel({ ids: [jobIds[3]!] });
    const handlers = {
      work: (p: { fail?: boolean }) => {
        if (p.fail) throw new PermanentError("no");
      },
    };
    await t.errand.worker({ handlers: { ...handlers, report: () => {} }, concurrency: 1, prefetch: 1 }).runOnce();
    const midway = await t.errand.getBatch(batchId);
    expect(midway).toMatchObject({ status: "open", remaining: 2, done: 1, cancelled: 1, failedIds: [jobIds[3]] });
    expect(await callbacks()).toEqual([]);

    await t.errand.worker({ handlers }).runOnce();
    const [callback, ...more] = await callbacks();
    expect(more).toEqual([]);
    expect(callback!.payload).toEqual({ albumId: 7, batch: { id: batchId, total: 4, done: 2, dead: 1, cancelled: 1, failedIds: [jobIds[2], jobIds[3]] } });
    expect(await t.errand.getJob(callback!.id)).toMatchObject({ status: "ready", priority: 5, batchId: null });
    const finished = await t.errand.getBatch(batchId);
    expect(finished).toMatchObject({ status: "finished", remaining: 0, done: 2, dead: 1, cancelled: 1, failedIds: [jobIds[2], jobIds[3]], callbackJobId: callback!.id });
    expect(finished!.finishedAt).toBeInstanceOf(Date);
  });

  it("finishes when the members finish in one statement together (one worker's batch of completions)", async () => {
    const { batchId, jobIds } = await t.errand.batch({ jobs: Array.from({ length: 20 }, (_, n) => ({ kind: "work", payload: { n } })), then: { kind: "report" } });
    expect(await t.errand.worker({ handlers: { work: () => {} }, concurrency: 20, prefetch: 20 }).runOnce()).toBe(20);
    const [callback, ...more] = await callbacks();
    expect(more).toEqual([]);
    expect(callback!.payload).toEqual({ batch: { id: batchId, total: 20, done: 20, dead: 0, cancelled: 0, failedIds: [] } });
    expect((await t.errand.batchMembers(batchId)).map((m) => [m.id, m.status])).toEqual(jobIds.map((id) => [id, "done"]));
  });

  it("each of errand's statements that finishes members updates their batch's row once, however many; plain SQL counts member by member", async () => {
    const { batchId, jobIds } = await t.errand.batch({ jobs: Array.from({ length: 30 }, (_, n) => ({ kind: "work", payload: { n } })), then: { kind: "report" } });
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(), locked_by = 'w', locked_until = now() + interval '1 hour' WHERE batch_id = $1`, [batchId]);
    // Every write of the batch's row, as it left it.
    await t.sql(`CREATE TABLE ${t.schema}.batch_writes (n serial, remaining int)`);
    await t.sql(`CREATE FUNCTION ${t.schema}.note_batch_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ${t.schema}.batch_writes (remaining) VALUES (NEW.remaining); RETURN NULL; END $$`);
    await t.sql(`CREATE TRIGGER note_batch_write AFTER UPDATE ON ${t.schema}.batches FOR EACH ROW EXECUTE FUNCTION ${t.schema}.note_batch_write()`);
    const writes = async () => (await t.sql<{ remaining: number }>(`SELECT remaining FROM ${t.schema}.batch_writes ORDER BY n`)).map((row) => row.remaining);
    const q = queriesFor(t.schema);
    const complete = async (ids: readonly string[]) => (await t.sql(q.complete.text, [ids, byId(ids, ids.map(() => 1)), "w"])).length;

    expect(await complete(jobIds.slice(0, 20))).toBe(20);
    expect(await writes()).toEqual([10]);
    expect(await t.errand.getBatch(batchId)).toMatchObject({ status: "open", remaining: 10, done: 20 });
    // Failures: three for good, one to be retried (still unfinished).
    const failing = jobIds.slice(20, 24);
    const failed = await t.sql<{ status: string }>(q.fail.text, [failing, byId(failing, failing.map((_, n) => [1, 1000, n < 3, "boom"])), "w"]);
    expect(failed.map((row) => row.status).sort()).toEqual(["dead", "dead", "dead", "ready"]);
    expect(await writes()).toEqual([10, 7]);
    // A plain SQL update goes through the member trigger.
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'cancelled', locked_by = NULL, locked_until = NULL, finished_at = now() WHERE id = $1`, [jobIds[24]]);
    expect(await writes()).toEqual([10, 7, 6]);
    // errand's cancel: the member waiting for its retry and a running one.
    expect((await t.errand.cancel({ ids: [jobIds[23]!, jobIds[25]!] })).sort()).toEqual([jobIds[23], jobIds[25]].sort());
    expect(await writes()).toEqual([10, 7, 6, 4]);
    // The rescuer buries two whose lease ran out on their last attempt.
    await t.sql(`UPDATE ${t.schema}.jobs SET attempts = max_attempts, locked_until = now() - interval '1 minute' WHERE id = ANY($1)`, [jobIds.slice(26, 28)]);
    expect((await t.errand.rescuer().runOnce()).dead).toBe(2);
    expect(await writes()).toEqual([10, 7, 6, 4, 2]);
    // Three dead ones retried: unfinished again, in one write; then claimed again.
    const retried = jobIds.slice(20, 23);
    expect((await t.errand.dead.retry({ ids: retried })).sort()).toEqual([...retried].sort());
    expect(await writes()).toEqual([10, 7, 6, 4, 2, 5]);
    expect(await t.errand.getBatch(batchId)).toMatchObject({ status: "open", remaining: 5, dead: 2 });
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(), locked_by = 'w', locked_until = now() + interval '1 hour' WHERE id = ANY($1)`, [retried]);
    expect(await callbacks()).toEqual([]);

    // The completion of the last five: one count, then the finish.
    expect(await complete([...retried, ...jobIds.slice(28)])).toBe(5);
    expect(await writes()).toEqual([10, 7, 6, 4, 2, 5, 0, 0]);
    const [callback, ...more] = await callbacks();
    expect(more).toEqual([]);
    const failedIds = [...jobIds.slice(23, 28)].sort((a, b) => Number(a) - Number(b));
    expect(callback!.payload).toEqual({ batch: { id: batchId, total: 30, done: 25, dead: 2, cancelled: 3, failedIds } });
    expect(await t.errand.getBatch(batchId)).toMatchObject({ status: "finished", remaining: 0, done: 25, dead: 2, cancelled: 3, callbackJobId: callback!.id });
  });

  it("a cancel by kind finishes a batch of ready and running members, with one callback", async () => {
    const { batchId } = await t.errand.batch({ jobs: Array.from({ length: 50 }, (_, n) => ({ kind: "many", payload: { n } })), then: { kind: "report" } });
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(), locked_by = 'w', locked_until = now() + interval '1 hour' WHERE batch_id = $1 AND id % 2 = 0`, [batchId]);
    expect(await t.errand.cancel({ kind: "many" })).toHaveLength(50);
    expect(await t.errand.getBatch(batchId)).toMatchObject({ status: "finished", remaining: 0, done: 0, cancelled: 50 });
    const [callback, ...more] = await callbacks();
    expect(more).toEqual([]);
    expect(callback!.payload.batch).toMatchObject({ total: 50, cancelled: 50 });
    expect(callback!.payload.batch.failedIds).toHaveLength(50);
  });

  it("a dead member retried before the batch finished counts as unfinished again; retried after, it runs alone and no second callback comes", async () => {
    const { batchId, jobIds } = await t.errand.batch({
      jobs: [
        { kind: "flaky", payload: {}, maxAttempts: 1 },
        { kind: "slow", payload: {}, maxAttempts: 1, delay: 3_600_000 },
      ],
      then: { kind: "report" },
    });
    // Each handler fails while its flag says so; slow waits (an hour's delay) until its turn.
    const fails = { flaky: true, slow: true };
    const fail = (kind: "flaky" | "slow") => () => {
      if (fails[kind]) throw new PermanentError(`${kind} gave up`);
    };
    const run = async (kind: "flaky" | "slow") => {
      if (kind === "slow") await t.sql(`UPDATE ${t.schema}.jobs SET run_at = now() WHERE kind = 'slow'`);
      return t.errand.worker({ handlers: { flaky: fail("flaky"), slow: fail("slow") } }).runOnce();
    };
    await run("flaky");
    expect(await t.errand.getBatch(batchId)).toMatchObject({ remaining: 1, dead: 1, failedIds: [jobIds[0]] });
    expect(await t.errand.dead.retry({ ids: [jobIds[0]!] })).toEqual([jobIds[0]]);
    expect(await t.errand.getBatch(batchId)).toMatchObject({ status: "open", remaining: 2, dead: 0, failedIds: [] });

    fails.flaky = false;
    await run("flaky");
    expect(await t.errand.getBatch(batchId)).toMatchObject({ remaining: 1, done: 1, dead: 0 });
    await run("slow");
    expect(await t.errand.getBatch(batchId)).toMatchObject({ status: "finished", done: 1, dead: 1, failedIds: [jobIds[1]] });
    expect((await callbacks()).map((c) => c.payload.batch)).toEqual([{ id: batchId, total: 2, done: 1, dead: 1, cancelled: 0, failedIds: [jobIds[1]] }]);

    // After the batch finished: the retried member runs, the batch stays as it ended.
    await t.errand.dead.retry({ ids: [jobIds[1]!] });
    fails.slow = false;
    await run("slow");
    expect((await t.errand.getJob(jobIds[1]!))?.status).toBe("done");
    expect(await t.errand.getBatch(batchId)).toMatchObject({ status: "finished", done: 1, dead: 1, failedIds: [jobIds[1]] });
    expect(await callbacks()).toHaveLength(1);
  });

  it("counts members the rescuer buries, and cancels of running members", async () => {
    const { batchId, jobIds } = await t.errand.batch({ jobs: [{ kind: "work", payload: {}, maxAttempts: 1 }, { kind: "work", payload: {} }], then: { kind: "report" } });
    // Both claimed by a worker that then vanished: one lease expired on its last attempt, the other cancelled.
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(), locked_by = 'gone', locked_until = now() - interval '1 minute' WHERE id = $1`, [jobIds[0]]);
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(), locked_by = 'gone', locked_until = now() + interval '1 hour' WHERE id = $1`, [jobIds[1]]);
    const rescued = await t.errand.rescuer().runOnce();
    expect(rescued.dead).toBe(1);
    await t.errand.cancel({ ids: [jobIds[1]!] });
    expect(await t.errand.getBatch(batchId)).toMatchObject({ status: "finished", dead: 1, cancelled: 1, failedIds: jobIds });
    expect(await callbacks()).toHaveLength(1);
  });

  it("a callback the jobs table refuses (its batch row edited by hand) is recorded on the batch; the member's outcome is written", async () => {
    const { batchId, jobIds } = await t.errand.batch({ jobs: [{ kind: "work", payload: {} }], then: { kind: "report" } });
    await t.sql(`UPDATE ${t.schema}.batches SET callback = jsonb_set(callback, '{max_attempts}', '0') WHERE id = $1`, [batchId]);
    await t.errand.worker({ handlers: { work: () => {} } }).runOnce();
    expect((await t.errand.getJob(jobIds[0]!))?.status).toBe("done");
    expect(await t.errand.getBatch(batchId)).toMatchObject({ status: "finished", done: 1, callbackJobId: null, callbackError: expect.stringMatching(/jobs_max_attempts_check/) });
    expect(await callbacks()).toEqual([]);
  });

  it("joins the caller's transaction: rolled back, neither the batch nor a member exists", async () => {
    await t.inTransaction((db) => t.errand.batch({ jobs: [{ kind: "work", payload: {} }], then: { kind: "report" } }, { db }), false);
    expect([await count("batches"), await count("jobs")]).toEqual([0, 0]);
    const { batchId } = await t.inTransaction((db) => t.errand.batch({ jobs: [{ kind: "work", payload: {} }], then: { kind: "report" } }, { db }));
    expect((await t.errand.getBatch(batchId))?.total).toBe(1);
  });

  it("refuses bad input with an error naming the field, and writes nothing", async () => {
    const work = { kind: "work", payload: {} };
    const cases: [unknown, RegExp][] = [
      [{ jobs: [], then: { kind: "report" } }, /^jobs: a batch needs at least one job/],
      [{ jobs: work, then: { kind: "report" } }, /^jobs: must be an array/],
      [{ jobs: Array.from({ length: 10_001 }, () => work), then: { kind: "report" } }, /^jobs: a batch holds at most 10000 jobs, got 10001/],
      [{ jobs: [work] }, /^then: must be the callback job/],
      [{ jobs: [work], then: "report" }, /^then: must be the callback job/],
      [{ jobs: [work], then: { kind: 42 } }, /^then\.kind: /],
      [{ jobs: [work], then: { payload: {} } }, /^then\.kind: /],
      [{ jobs: [work], then: { kind: "" } }, /^then\.kind: /],
      [{ jobs: [work], then: { kind: "k".repeat(201) } }, /^then\.kind: /],
      [{ jobs: [work], then: { kind: "report", payload: [1] } }, /^then\.payload: must be a JSON object/],
      [{ jobs: [work], then: { kind: "report", payload: { batch: 1 } } }, /^then\.payload\.batch: is set by errand/],
      [{ jobs: [work], then: { kind: "report", payload: { big: "x".repeat(2000) } } }, /^then\.payload: is \d+ bytes of JSON, over the limit of 1000/],
      [{ jobs: [work], then: { kind: "report", priority: 1.5 } }, /^then\.priority: /],
      [{ jobs: [work], then: { kind: "report", delay: 10 } }, /^then\.delay: is not allowed/],
      [{ jobs: [work], then: { kind: "report", dedupeKey: "x" } }, /^then\.dedupeKey: is not allowed/],
      [{ jobs: [work], then: { kind: "report", priorty: 1 } }, /^then\.priorty: unknown option — did you mean 'priority'\?/],
      [{ jobs: [work, { kind: "work", payload: { big: "x".repeat(2000) } }], then: { kind: "report" } }, /^jobs\[1\]\.payload: is \d+ bytes/],
      [{ jobs: [work, { kind: "work", dedupeKey: "a" }], then: { kind: "report" } }, /^jobs\[1\]\.dedupeKey: is not allowed in a batch/],
      [{ jobs: [work, { kind: "work", maxAttempts: 0 }], then: { kind: "report" } }, /^jobs\[1\]\.maxAttempts: /],
      [{ jobs: [work], then: { kind: "report" }, extra: 1 }, /^batch\.extra: unknown option/],
    ];
    for (const [spec, message] of cases) {
      const error = await t.errand.batch(spec as never).catch((e: unknown) => e);
      expect(error, String(message)).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(message);
    }
    expect([await count("batches"), await count("jobs")]).toEqual([0, 0]);
  });

  it("reads batches: unknown ids, the list newest first by status, and members page by page", async () => {
    expect(await t.errand.getBatch("999")).toBeNull();
    await expect(t.errand.batchMembers("999")).rejects.toThrow(NotFoundError);
    await expect(t.errand.getBatch("x")).rejects.toThrow(ValidationError);
    const a = await t.errand.batch({ jobs: [{ kind: "work", payload: {} }], then: { kind: "report" } });
    const b = await t.errand.batch({ jobs: [{ kind: "work", payload: {} }, { kind: "work", payload: {} }, { kind: "work", payload: {} }], then: { kind: "report" } });
    await t.errand.cancel({ ids: a.jobIds });
    expect((await t.errand.listBatches()).map((x) => x.id)).toEqual([b.batchId, a.batchId]);
    expect((await t.errand.listBatches({ status: "finished" })).map((x) => x.id)).toEqual([a.batchId]);
    expect((await t.errand.listBatches({ status: "open" })).map((x) => x.id)).toEqual([b.batchId]);
    expect((await t.errand.listBatches({ beforeId: b.batchId })).map((x) => x.id)).toEqual([a.batchId]);
    await expect(t.errand.listBatches({ status: "done" as never })).rejects.toThrow(/^status: must be "open" or "finished"/);
    const first = await t.errand.batchMembers(b.batchId, { limit: 2 });
    const rest = await t.errand.batchMembers(b.batchId, { afterId: first.at(-1)!.id });
    expect([...first, ...rest].map((m) => m.id)).toEqual(b.jobIds);
  });
});

describe("typed batches", () => {
  const jobs = defineJobs({
    resize: { payload: json<{ imageId: number }>() },
    album_ready: { payload: json<BatchCallbackPayload<{ albumId: number }>>() },
  });

  it("types the members and the callback, and the handler sees the outcome", async () => {
    const errand = Errand.fromDriver(t.errand.driver, { schema: t.schema, jobs });
    const { batchId } = await errand.batch({
      jobs: [{ kind: "resize", payload: { imageId: 1 } }],
      then: { kind: "album_ready", payload: { albumId: 7 } },
    });
    // Compiled, never called: what the types refuse.
    const refused = () => [
      // @ts-expect-error: a kind whose payload has no `batch` cannot be a callback
      errand.batch({ jobs: [{ kind: "resize", payload: { imageId: 1 } }], then: { kind: "resize", payload: { imageId: 2 } } }),
      // @ts-expect-error: the callback's payload is its kind's, without `batch`
      errand.batch({ jobs: [{ kind: "resize", payload: { imageId: 1 } }], then: { kind: "album_ready", payload: { albumId: "7" } } }),
      // @ts-expect-error: a member's payload is its kind's
      errand.batch({ jobs: [{ kind: "resize", payload: { imageId: "1" } }], then: { kind: "album_ready", payload: { albumId: 7 } } }),
    ];
    expect(typeof refused).toBe("function");
    const seen: BatchCallbackPayload<{ albumId: number }>[] = [];
    await errand.worker({ handlers: { resize: () => {}, album_ready: (payload) => void seen.push(payload) } }).runOnce();
    await errand.worker({ handlers: { resize: () => {}, album_ready: (payload) => void seen.push(payload) } }).runOnce();
    expect(seen).toEqual([{ albumId: 7, batch: { id: batchId, total: 1, done: 1, dead: 0, cancelled: 0, failedIds: [] } }]);
  });

  it("checks the callback's payload with its kind's schema, outcome included", async () => {
    const schema = {
      "~standard": {
        version: 1 as const,
        vendor: "test",
        validate: (value: unknown) => {
          const v = value as { albumId?: unknown; batch?: { total?: unknown } };
          return typeof v.albumId === "number" && typeof v.batch?.total === "number" ? { value: { albumId: v.albumId, batch: v.batch, checked: true } } : { issues: [{ message: "needs albumId", path: ["albumId"] }] };
        },
      },
    };
    const withSchema = defineJobs({ resize: { payload: json<{ imageId: number }>() }, album_ready: { payload: schema } });
    const errand = Errand.fromDriver(t.errand.driver, { schema: t.schema, jobs: withSchema });
    await expect(errand.batch({ jobs: [{ kind: "resize", payload: { imageId: 1 } }], then: { kind: "album_ready", payload: {} } as never })).rejects.toThrow(/^then\.payload\.albumId: needs albumId/);
    const { batchId } = await errand.batch({ jobs: [{ kind: "resize", payload: { imageId: 1 } }], then: { kind: "album_ready", payload: { albumId: 3 } } as never });
    expect((await errand.getBatch(batchId))?.callback.payload).toEqual({ albumId: 3, checked: true });
  });
});
