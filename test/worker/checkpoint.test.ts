import { describe, expect, it } from "vitest";
import { ErrandError, ValidationError, type JobContext, type WorkerEvent } from "../../src/index.js";
import { useTestErrand } from "../support/db.js";

const t = useTestErrand();

const makeDue = () => t.sql(`UPDATE ${t.schema}.jobs SET run_at = now() WHERE status = 'ready'`);
const row = async (id: string) =>
  (await t.sql<{ status: string; attempts: number; checkpoint: string | null; locked_by: string | null }>(
    `SELECT status, attempts, checkpoint::text AS checkpoint, locked_by FROM ${t.schema}.all_jobs WHERE id = $1`,
    [id],
  ))[0]!;
/** What a handler's promise rejected with. */
const rejection = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);
/** A table the handlers write their effects to, in their own transactions. */
const effects = () => t.sql(`CREATE TABLE ${t.schema}.effects (job_id bigint, note text)`);
const effectCount = async () => Number((await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.effects`))[0]!.n);

describe("ctx.checkpoint", () => {
  it("saves state that the next attempt receives as lastCheckpoint, and keeps it once the job is done", async () => {
    const { id } = await t.errand.enqueue("import", {});
    const seen: (unknown)[] = [];
    const worker = t.errand.worker({
      handlers: {
        import: async (_payload: unknown, ctx: JobContext) => {
          seen.push(ctx.lastCheckpoint);
          if (ctx.attempt === 1) {
            await ctx.checkpoint({ page: 1 });
            await ctx.checkpoint({ page: 2, cursor: "b" });
            throw new Error("crashed on page 3");
          }
          await ctx.checkpoint("finished");
        },
      },
    });
    await worker.runOnce();
    expect(await row(id)).toMatchObject({ status: "ready", checkpoint: '{"page": 2, "cursor": "b"}' });
    await makeDue();
    await worker.runOnce();
    expect(seen).toEqual([undefined, { page: 2, cursor: "b" }]);
    expect(await row(id)).toMatchObject({ status: "done", attempts: 2, checkpoint: '"finished"' });
    expect((await t.errand.getJob(id))?.checkpoint).toBe("finished");
  });

  it("refuses state that is not JSON or too large, naming the value, and keeps the last checkpoint", async () => {
    const { id } = await t.errand.enqueue("k", {});
    const errors: unknown[] = [];
    const worker = t.errand.worker({
      handlers: {
        k: async (_payload: unknown, ctx: JobContext) => {
          await ctx.checkpoint({ done: 10 });
          const bad: unknown[] = [undefined, { at: new Date(0) }, { rows: [1, Number.NaN] }, { blob: "x".repeat(70_000) }];
          for (const state of bad) errors.push(await rejection(ctx.checkpoint(state as never)));
        },
      },
    });
    await worker.runOnce();
    expect(errors.every((e) => e instanceof ValidationError)).toBe(true);
    expect((errors as ValidationError[]).map((e) => e.field)).toEqual(["checkpoint", "checkpoint.at", "checkpoint.rows[1]", "checkpoint"]);
    expect((errors[0] as Error).message).toMatch(/checkpoint: is undefined, which is not JSON/);
    expect((errors[1] as Error).message).toMatch(/checkpoint\.at: is a Date/);
    expect((errors[3] as Error).message).toMatch(/checkpoint: is 70011 bytes of JSON, over the limit of 65536/);
    expect(await row(id)).toMatchObject({ status: "done", checkpoint: '{"done": 10}' });
  });

  it("rejects with lease_lost once the job is no longer this worker's, and writes nothing", async () => {
    const { id } = await t.errand.enqueue("k", {});
    let error: unknown;
    const worker = t.errand.worker({
      handlers: {
        k: async (_payload: unknown, ctx: JobContext) => {
          // Another worker took it over (as after a rescue and a new claim).
          await t.sql(`UPDATE ${t.schema}.jobs SET locked_by = 'someone-else' WHERE id = $1`, [id]);
          error = await rejection(ctx.checkpoint({ page: 9 }));
        },
      },
    });
    await worker.runOnce();
    expect(error).toBeInstanceOf(ErrandError);
    expect(error).toMatchObject({ code: "lease_lost" });
    expect((error as Error).message).toMatch(new RegExp(`job ${id} cannot save its checkpoint: it is no longer running on this worker for attempt 1 \\(its lease was lost`));
    expect(await row(id)).toMatchObject({ checkpoint: null, locked_by: "someone-else" });
  });
});

describe("ctx.complete(tx)", () => {
  it("marks the job done in the handler's transaction: one effect, done, no second write reported lost", async () => {
    await effects();
    const { id } = await t.errand.enqueue("k", {});
    const events: WorkerEvent[] = [];
    const worker = t.errand.worker({
      onEvent: (event) => events.push(event),
      handlers: {
        k: (_payload: unknown, ctx: JobContext) =>
          t.inTransaction(async (tx) => {
            await tx.query(`INSERT INTO ${t.schema}.effects VALUES ($1, 'charged')`, [ctx.id]);
            await ctx.complete(tx);
            // Inside the transaction, the job is done already; outside, not until the commit.
            expect((await tx.query<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE id = $1`, [ctx.id])).rows[0]?.status).toBe("done");
          }),
      },
    });
    await worker.runOnce();
    expect(await effectCount()).toBe(1);
    expect(await row(id)).toMatchObject({ status: "done", attempts: 1, locked_by: null });
    expect(events.filter((e) => e.type === "lease_lost" || e.type === "error")).toEqual([]);
    expect(events.map((e) => e.type)).toContain("job_done");
    const [stats] = await t.sql<{ done: number }>(`SELECT sum(done)::int AS done FROM ${t.schema}.outcome_counts`);
    expect(stats?.done).toBe(1);
  });

  it("when the transaction rolls back, the handler's outcome is written as usual", async () => {
    await effects();
    const { id } = await t.errand.enqueue("k", {});
    const events: WorkerEvent[] = [];
    const worker = t.errand.worker({
      onEvent: (event) => events.push(event),
      handlers: {
        k: async (_payload: unknown, ctx: JobContext) => {
          if (ctx.attempt === 1) {
            await t.inTransaction(async (tx) => {
              await tx.query(`INSERT INTO ${t.schema}.effects VALUES ($1, 'rolled back')`, [ctx.id]);
              await ctx.complete(tx);
            }, false);
            throw new Error("the transaction did not commit");
          }
          await t.inTransaction(async (tx) => {
            await ctx.complete(tx);
          }, false);
        },
      },
    });
    await worker.runOnce();
    expect(await row(id)).toMatchObject({ status: "ready", attempts: 1 });
    await makeDue();
    await worker.runOnce();
    // Rolled back again, and the handler returned: the worker's own completion marks it done.
    expect(await row(id)).toMatchObject({ status: "done", attempts: 2 });
    expect(await effectCount()).toBe(0);
    expect(events.filter((e) => e.type === "lease_lost")).toEqual([]);
  });

  it("rejects with lease_lost when the job is no longer this worker's, so the transaction rolls back", async () => {
    await effects();
    const { id } = await t.errand.enqueue("k", {});
    let error: unknown;
    const worker = t.errand.worker({
      handlers: {
        k: async (_payload: unknown, ctx: JobContext) => {
          await t.sql(`UPDATE ${t.schema}.jobs SET locked_by = 'someone-else' WHERE id = $1`, [id]);
          error = await rejection(
            t.inTransaction(async (tx) => {
              await tx.query(`INSERT INTO ${t.schema}.effects VALUES ($1, 'must not stay')`, [ctx.id]);
              await ctx.complete(tx);
            }),
          );
        },
      },
    });
    await worker.runOnce();
    expect(error).toMatchObject({ code: "lease_lost" });
    expect((error as Error).message).toMatch(new RegExp(`job ${id} cannot complete it in this transaction: it is no longer running on this worker for attempt 1`));
    expect(await effectCount()).toBe(0);
    expect(await row(id)).toMatchObject({ status: "running", locked_by: "someone-else" });
  });

  it("refuses something that is not a transaction, naming it", async () => {
    await t.errand.enqueue("k", {});
    let error: unknown;
    const worker = t.errand.worker({
      handlers: {
        k: async (_payload: unknown, ctx: JobContext) => {
          error = await rejection(ctx.complete({} as never));
        },
      },
    });
    await worker.runOnce();
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ field: "tx" });
  });
});
