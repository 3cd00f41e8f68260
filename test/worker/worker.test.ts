import { describe, expect, it } from "vitest";
import { NotFoundError, PermanentError, snooze, type JobContext, type WorkerEvent } from "../../src/index.js";
import { eventually, testErrand, useTestErrand } from "../support/db.js";
import { nastyThrownValues } from "../support/thrown.js";

const t = useTestErrand();

/** SQL time travel: make every waiting job due now. */
const makeDue = () => t.sql(`UPDATE ${t.schema}.jobs SET run_at = now() WHERE status = 'ready'`);
const row = async (id: string) =>
  (await t.sql<{ status: string; attempts: number; last_error: string | null; wait_s: number; errors: { attempt: number; error: string }[] }>(
    `SELECT status, attempts, last_error, extract(epoch FROM run_at - now())::float8 AS wait_s, errors FROM ${t.schema}.all_jobs WHERE id = $1`,
    [id],
  ))[0]!;

describe("worker", () => {
  it("runs a handler with the payload and a context, then marks the job done", async () => {
    const seen: [unknown, JobContext][] = [];
    const { id } = await t.errand.enqueue("send_receipt", { order_id: 1042 });
    const worker = t.errand.worker({ handlers: { send_receipt: async (payload: unknown, ctx) => void seen.push([payload, ctx]) } });
    expect(await worker.runOnce()).toBe(1);
    const [payload, ctx] = seen[0]!;
    expect(payload).toEqual({ order_id: 1042 });
    expect(ctx).toMatchObject({ id, kind: "send_receipt", attempt: 1, maxAttempts: 8, idempotencyKey: `errand-job-${id}` });
    expect(ctx.signal).toBeInstanceOf(AbortSignal);
    expect(await row(id)).toMatchObject({ status: "done", attempts: 1, last_error: null });
  });

  it("claims by priority, then run_at", async () => {
    const order: number[] = [];
    await t.errand.enqueueMany([
      { kind: "k", payload: 1 },
      { kind: "k", payload: 2, priority: 10 },
      { kind: "k", payload: 3 },
    ]);
    const worker = t.errand.worker({ concurrency: 1, handlers: { k: async (n: number) => void order.push(n) } });
    while ((await worker.runOnce()) > 0);
    expect(order).toEqual([2, 1, 3]);
  });

  it("does not claim jobs that are not due yet", async () => {
    await t.errand.enqueue("k", {}, { delay: 60_000 });
    const worker = t.errand.worker({ handlers: { k: async () => {} } });
    expect(await worker.runOnce()).toBe(0);
  });

  it("reschedules a failure with the seed's backoff, keeping message and stack", async () => {
    const { id } = await t.errand.enqueue("flaky", {});
    const worker = t.errand.worker({ handlers: { flaky: async () => { throw new Error("SMTP 421 try later"); } } });
    const expected = [30, 60, 120, 240, 480, 960, 1920];
    for (const [i, wait] of expected.entries()) {
      await worker.runOnce();
      const r = await row(id);
      expect(r.status).toBe("ready");
      expect(r.attempts).toBe(i + 1);
      expect(r.wait_s).toBeGreaterThanOrEqual(wait * 0.5 - 1);
      expect(r.wait_s).toBeLessThanOrEqual(wait);
      expect(r.last_error).toMatch(/^Error: SMTP 421 try later\n\s+at /);
      await makeDue();
    }
    await worker.runOnce();
    const dead = await row(id);
    expect(dead).toMatchObject({ status: "dead", attempts: 8 });
    expect(dead.last_error).toContain("SMTP 421 try later");
    expect(dead.errors.map((e) => e.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("uses per-kind and per-job retry policies and max attempts", async () => {
    const custom = await testErrand({ kinds: { fast: { maxAttempts: 2, retry: { baseDelayMs: 1000, jitter: 0 } } } });
    try {
      const a = await custom.errand.enqueue("fast", {});
      const b = await custom.errand.enqueue("fast", {}, { retry: { baseDelayMs: 10_000 }, maxAttempts: 5 });
      const worker = custom.errand.worker({ handlers: { fast: async () => { throw new Error("no"); } } });
      await worker.runOnce();
      const waits = await custom.sql<{ id: string; wait_s: number }>(`SELECT id::text, extract(epoch FROM run_at - now())::float8 AS wait_s FROM ${custom.schema}.all_jobs j ORDER BY j.id`);
      expect(waits[0]!.wait_s).toBeGreaterThan(0.5);
      expect(waits[0]!.wait_s).toBeLessThanOrEqual(1);
      expect(waits[1]!.wait_s).toBeGreaterThan(9);
      expect(waits[1]!.wait_s).toBeLessThanOrEqual(10);
      await custom.sql(`UPDATE ${custom.schema}.jobs SET run_at = now()`);
      await worker.runOnce();
      expect((await custom.errand.getJob(a.id))!.status).toBe("dead");
      expect((await custom.errand.getJob(b.id))!.status).toBe("ready");
    } finally {
      await custom.cleanup();
    }
  });

  it("sends a permanent error straight to dead", async () => {
    const { id } = await t.errand.enqueue("signup", { email: "nope" });
    const worker = t.errand.worker({ handlers: { signup: async () => { throw new PermanentError("not an email address: nope"); } } });
    await worker.runOnce();
    expect(await row(id)).toMatchObject({ status: "dead", attempts: 1 });
    expect((await row(id)).last_error).toMatch(/^PermanentError: not an email address: nope/);
  });

  it("never claims a job of a kind it has no handler for: it stays ready, no attempt spent", async () => {
    const { id } = await t.errand.enqueue("emial", {});
    const { id: handled } = await t.errand.enqueue("email", {});
    const worker = t.errand.worker({ handlers: { email: async () => {}, resize: async () => {} } });
    expect(await worker.runOnce()).toBe(1);
    expect(await worker.runOnce()).toBe(0);
    expect(await row(id)).toMatchObject({ status: "ready", attempts: 0, last_error: null });
    expect((await row(handled)).status).toBe("done");
  });

  it("snoozes without spending an attempt", async () => {
    const { id } = await t.errand.enqueue("k", {});
    const worker = t.errand.worker({ handlers: { k: async () => snooze(60_000) } });
    await worker.runOnce();
    const r = await row(id);
    expect(r).toMatchObject({ status: "ready", attempts: 0 });
    expect(r.wait_s).toBeGreaterThan(55);
  });

  it("wakes on NOTIFY, long before its poll interval", async () => {
    const done: string[] = [];
    const worker = t.errand.worker({ pollIntervalMs: 600_000, handlers: { k: async (_: unknown, ctx) => void done.push(ctx.id) } });
    const { id: probe } = await t.errand.enqueue("k", {});
    await worker.start();
    // The probe proves the first claim happened; the queue is then empty and only a
    // notification can wake the worker before its ten-minute poll.
    await eventually(() => done.includes(probe), 5_000, "the probe job to run");
    const { id } = await t.errand.enqueue("k", {});
    await eventually(() => done.includes(id), 30_000, "the notified job to run"); // the poll would take 10 min
    await worker.stop();
  });

  it("processes a stream of jobs with bounded concurrency", async () => {
    let active = 0;
    let peak = 0;
    await t.errand.enqueueMany(Array.from({ length: 300 }, (_, i) => ({ kind: "k", payload: { i } })));
    const worker = t.errand.worker({
      concurrency: 7,
      handlers: {
        k: async () => {
          peak = Math.max(peak, ++active);
          await new Promise((resolve) => setImmediate(resolve)); // let the batch's other handlers start
          active--;
        },
      },
    });
    await worker.start();
    await eventually(async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs WHERE status = 'done'`))[0]!.n === 300, 20_000, "300 done");
    await worker.stop();
    expect(peak).toBeLessThanOrEqual(7);
    expect(peak).toBeGreaterThan(1);
  });

  it("on stop, gives back claimed-but-unstarted jobs without spending an attempt", async () => {
    await t.errand.enqueueMany(Array.from({ length: 10 }, () => ({ kind: "slow", payload: {} })));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const events: WorkerEvent[] = [];
    const worker = t.errand.worker({ concurrency: 2, prefetch: 8, handlers: { slow: () => gate }, onEvent: (e) => events.push(e) });
    await worker.start();
    await eventually(() => worker.activeCount === 2, 5_000, "two running");
    const stopping = worker.stop({ timeout: 10_000 });
    release();
    await stopping;
    const counts = await t.sql<{ status: string; attempts: number; n: number }>(
      `SELECT status, attempts, count(*)::int AS n FROM ${t.schema}.all_jobs GROUP BY 1, 2 ORDER BY 1`,
    );
    expect(counts).toEqual([
      { status: "done", attempts: 1, n: 2 },
      { status: "ready", attempts: 0, n: 8 },
    ]);
    expect(events.find((e) => e.type === "stopped")).toMatchObject({ released: 8 });
  });

  it("aborts a handler that outlives the shutdown timeout and returns its job unspent", async () => {
    const { id } = await t.errand.enqueue("stuck", {});
    let aborted: unknown;
    const worker = t.errand.worker({
      handlers: {
        stuck: (_: unknown, ctx) =>
          new Promise<void>((_, reject) =>
            ctx.signal.addEventListener("abort", () => {
              aborted = ctx.signal.reason;
              reject(new Error("aborted"));
            }),
          ),
      },
    });
    await worker.start();
    await eventually(() => worker.activeCount === 1, 5_000, "the job to start");
    await worker.stop({ timeout: 50 });
    expect(String(aborted)).toContain("shutting down");
    expect(await row(id)).toMatchObject({ status: "ready", attempts: 0, last_error: null });
  });
});

describe("thrown values", () => {
  it("whatever a handler throws fails only its own job; the worker and the jobs beside it carry on", async () => {
    const nasty = Object.entries(nastyThrownValues());
    const jobs = await t.errand.enqueueMany([
      ...nasty.map((_, i) => ({ kind: "nasty", payload: { i } })),
      ...Array.from({ length: 20 }, () => ({ kind: "fine", payload: {} })),
    ]);
    const errors: WorkerEvent[] = [];
    const worker = t.errand.worker({
      concurrency: 8,
      handlers: {
        nasty: async ({ i }: { i: number }) => {
          throw nasty[i]![1]();
        },
        fine: async () => {},
      },
      onEvent: (e) => void (e.type === "error" && errors.push(e)),
    });
    await worker.start();
    await eventually(
      async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs WHERE status = 'running' OR attempts = 0`))[0]!.n === 0,
      20_000,
      "every job to have run",
    );
    await worker.stop();
    const after = await t.sql<{ id: string; status: string; attempts: number; last_error: string | null }>(
      `SELECT id::text, status, attempts, last_error FROM ${t.schema}.all_jobs j ORDER BY j.id`,
    );
    expect(after.slice(0, nasty.length).map((r) => [r.status, r.attempts, typeof r.last_error])).toEqual(nasty.map(() => ["ready", 1, "string"]));
    expect(after.slice(nasty.length).map((r) => [r.status, r.attempts])).toEqual(jobs.slice(nasty.length).map(() => ["done", 1]));
    expect(errors).toEqual([]);
  });
});

describe("dead letters", () => {
  async function makeDead(kind: string, n: number): Promise<string[]> {
    const jobs = await t.errand.enqueueMany(Array.from({ length: n }, (_, i) => ({ kind, payload: { i }, maxAttempts: 1 })));
    const worker = t.errand.worker({ concurrency: 50, handlers: { [kind]: async () => { throw new Error(`${kind} broke`); } } });
    while ((await worker.runOnce()) > 0);
    return jobs.map((j) => j.id);
  }

  it("lists dead jobs with their error, filtered by kind and paged", async () => {
    const emails = await makeDead("email", 3);
    await makeDead("resize", 2);
    const all = await t.errand.dead.list();
    expect(all).toHaveLength(5);
    const onlyEmail = await t.errand.dead.list({ kind: "email" });
    expect(onlyEmail.map((j) => j.id)).toEqual(emails);
    expect(onlyEmail[0]!.lastError).toContain("email broke");
    const page = await t.errand.dead.list({ limit: 2, afterId: all[1]!.id });
    expect(page.map((j) => j.id)).toEqual(all.slice(2, 4).map((j) => j.id));
  });

  it("retries one, many or all of a kind, resetting attempts and keeping the old errors", async () => {
    const emails = await makeDead("email", 3);
    const resizes = await makeDead("resize", 2);
    expect(await t.errand.dead.retry({ ids: [emails[0]!] })).toEqual([emails[0]]);
    const retried = await t.errand.getJob(emails[0]!);
    expect(retried).toMatchObject({ status: "ready", attempts: 0 });
    expect(retried!.lastError).toContain("email broke");
    expect(retried!.errors).toHaveLength(1);
    expect((await t.errand.dead.retry({ kind: "resize" })).sort()).toEqual(resizes.sort());
    expect(await t.errand.dead.retry({ all: true })).toHaveLength(2);
    expect(await t.errand.dead.list()).toEqual([]);
  });

  it("discards dead jobs, and refuses ids that are not dead without changing anything", async () => {
    const dead = await makeDead("email", 2);
    const { id: alive } = await t.errand.enqueue("email", {});
    await expect(t.errand.dead.discard({ ids: [dead[0]!, alive, "999999"] })).rejects.toThrow(`no dead job with id ${alive}, 999999`);
    await expect(t.errand.dead.retry({ ids: ["999999"] })).rejects.toBeInstanceOf(NotFoundError);
    expect(await t.errand.dead.list()).toHaveLength(2);
    expect(await t.errand.dead.discard({ ids: [dead[0]!] })).toEqual([dead[0]]);
    expect(await t.errand.getJob(dead[0]!)).toBeNull();
    await expect(t.errand.dead.retry({ ids: ["abc"] })).rejects.toThrow('ids[0]: must be a job id (a positive integer), got "abc"');
  });
});
