import { describe, expect, it } from "vitest";
import { Errand, ValidationError } from "../../src/index.js";
import { drain } from "../../src/testing/index.js";
import { eventually, useTestErrand } from "../support/db.js";

// Named queues, kind filtering and pausing, on both databases.
const t = useTestErrand();

interface Row {
  id: string;
  kind: string;
  queue: string;
  status: string;
  attempts: number;
  started: boolean;
}
const rows = () => t.sql<Row>(`SELECT id::text, kind, queue, status, attempts, started_at IS NOT NULL AS started FROM ${t.schema}.all_jobs ORDER BY id`);
const count = async () => Number((await t.sql<{ n: string }>(`SELECT count(*) AS n FROM ${t.schema}.all_jobs`))[0]!.n);

/** A handler that blocks until `open()`; `started` lists the ids it began, in order. */
function gated() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const started: string[] = [];
  const handler = async (_: unknown, ctx: { id: string }) => {
    started.push(ctx.id);
    await gate;
  };
  return { started, open: () => open(), handler };
}

describe("queues", () => {
  it("puts a job in the default queue, its kind's queue, or the one its enqueue names; plain SQL gets the default", async () => {
    const errand = Errand.fromDriver(t.errand.driver, { schema: t.schema, kinds: { mail: { queue: "email" } } });
    const plain = await errand.enqueue("k", {});
    const byKind = await errand.enqueue("mail", {});
    const byJob = await errand.enqueue("mail", {}, { queue: "urgent.mail" });
    const [many] = await errand.enqueueMany([{ kind: "k", queue: "media", dedupeKey: "d1" }]);
    await t.sql(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('raw')`);
    expect((await rows()).map((r) => r.queue)).toEqual(["default", "email", "urgent.mail", "media", "default"]);
    expect((await errand.getJob(plain.id))!.queue).toBe("default");
    expect((await errand.getJob(byKind.id))!.queue).toBe("email");
    expect((await errand.getJob(byJob.id))!.queue).toBe("urgent.mail");
    expect((await errand.getJob(many!.id))!.queue).toBe("media");
  });

  it("refuses bad queue names and concurrency, naming the field, and writes nothing", async () => {
    await expect(t.errand.enqueue("k", {}, { queue: "bad name" })).rejects.toThrow(/^queue: must be a queue name/);
    await expect(t.errand.enqueueMany([{ kind: "k" }, { kind: "k", queue: "" }])).rejects.toThrow(/^jobs\[1\]\.queue: must be a queue name/);
    expect(await count()).toBe(0);
    const handlers = { k: async () => {} };
    const bad: [object, RegExp][] = [
      [{ queues: { email: 0 } }, /^queues\.email: must be an integer from 1 to 10000 \(got 0\)/],
      [{ queues: { email: -2 } }, /^queues\.email: must be an integer from 1 to 10000 \(got -2\)/],
      [{ queues: { email: 1.5 } }, /^queues\.email: must be an integer/],
      [{ queues: { "no spaces": 1 } }, /^queues\.no spaces: must be a queue name/],
      [{ queues: {} }, /^queues: must name at least one queue/],
      [{ queues: ["email"] }, /^queues: must be an object mapping queue name → concurrency/],
      [{ queues: { email: 1 }, concurrency: 5 }, /^concurrency: give concurrency or queues, not both/],
      [{ concurrency: 0 }, /^concurrency: must be an integer from 1 to 10000/],
    ];
    for (const [options, message] of bad) {
      const error = (() => {
        try {
          t.errand.worker({ handlers, ...options });
        } catch (caught) {
          return caught;
        }
      })();
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(message);
    }
    expect(() => Errand.fromDriver(t.errand.driver, { schema: t.schema, kinds: { mail: { queue: "a/b" } } })).toThrow(/^kinds\.mail\.queue: must be a queue name/);
  });

  it("a worker claims only from the queues it serves, each with its own concurrency", async () => {
    const slow = gated();
    await t.errand.enqueueMany([
      ...Array.from({ length: 4 }, () => ({ kind: "k", queue: "email" })),
      ...Array.from({ length: 3 }, () => ({ kind: "k", queue: "media" })),
      { kind: "k", queue: "other" },
      { kind: "k" },
    ]);
    const worker = t.errand.worker({ queues: { email: 2, media: 1 }, prefetch: 0, handlers: { k: slow.handler } });
    await worker.start();
    try {
      await eventually(() => slow.started.length === 3, 10_000, "2 email and 1 media job running");
      const running = (await rows()).filter((r) => r.status === "running");
      expect(running.map((r) => r.queue).sort()).toEqual(["email", "email", "media"]);
      expect(worker.activeCount).toBe(3);
      slow.open();
      await eventually(async () => (await rows()).filter((r) => r.status === "done").length === 7, 10_000, "the email and media jobs done");
      const rest = (await rows()).filter((r) => r.status !== "done");
      // Queues it does not serve: untouched, no attempt spent.
      expect(rest.map((r) => [r.queue, r.status, r.attempts])).toEqual([
        ["other", "ready", 0],
        ["default", "ready", 0],
      ]);
    } finally {
      await worker.stop();
    }
  });

  it("a worker with handlers for kind A never claims kind B: B stays ready with attempts 0", async () => {
    const jobs = await t.errand.enqueueMany(Array.from({ length: 20 }, (_, i) => ({ kind: i % 2 ? "a" : "b", payload: {} })));
    const worker = t.errand.worker({ concurrency: 4, handlers: { a: async () => {} } });
    await worker.start();
    try {
      await eventually(async () => (await rows()).filter((r) => r.kind === "a" && r.status === "done").length === 10, 10_000, "every kind-a job done");
      expect(jobs).toHaveLength(20);
      const b = (await rows()).filter((r) => r.kind === "b");
      expect(b.map((r) => [r.status, r.attempts, r.started])).toEqual(Array.from({ length: 10 }, () => ["ready", 0, false]));
    } finally {
      await worker.stop();
    }
  });
});

describe("drain (errand/testing)", () => {
  it("runs due jobs in every queue, including a queue a handler enqueues into; a kind without a handler stays ready", async () => {
    await t.errand.enqueueMany([{ kind: "first", queue: "a" }, { kind: "first" }, { kind: "nobody", queue: "a" }]);
    const result = await drain(t.errand, {
      first: async () => void (await t.errand.enqueue("second", {}, { queue: "b" })),
      second: async () => {},
    });
    expect(result.jobs.map((j) => j.kind).sort()).toEqual(["first", "first", "second", "second"]);
    expect(result.done).toBe(4);
    expect((await rows()).filter((r) => r.status !== "done").map((r) => [r.kind, r.status, r.attempts])).toEqual([["nobody", "ready", 0]]);
  });
});

describe("pause and resume", () => {
  it("pauses and resumes a queue or kind, reported by paused() and stats()", async () => {
    await t.errand.enqueueMany([{ kind: "k", queue: "email" }, { kind: "k" }, { kind: "k", queue: "email", delay: 60_000 }]);
    expect(await t.errand.pause({ queue: "email" })).toBe(true);
    expect(await t.errand.pause({ queue: "email" })).toBe(false);
    expect(await t.errand.pause({ kind: "k" })).toBe(true);
    expect(await t.errand.pause({ queue: "idle" })).toBe(true);
    const paused = await t.errand.paused();
    expect(paused.queues.map((q) => q.name)).toEqual(["email", "idle"]);
    expect(paused.kinds.map((k) => k.name)).toEqual(["k"]);
    expect(paused.queues[0]!.pausedAt).toBeInstanceOf(Date);
    const stats = await t.errand.stats();
    expect(stats.queues).toEqual({
      default: { ready: 1, scheduled: 0, running: 0, paused: false, limit: null },
      email: { ready: 1, scheduled: 1, running: 0, paused: true, limit: null },
      idle: { ready: 0, scheduled: 0, running: 0, paused: true, limit: null },
    });
    expect(stats.pausedKinds).toEqual(["k"]);
    expect(await t.errand.resume({ queue: "email" })).toBe(true);
    expect(await t.errand.resume({ queue: "email" })).toBe(false);
    expect(await t.errand.resume({ kind: "k" })).toBe(true);
    expect((await t.errand.stats()).pausedKinds).toEqual([]);
  });

  it("refuses a bad target, naming the field, and changes nothing", async () => {
    await expect(t.errand.pause({ queue: "no spaces" })).rejects.toThrow(/^queue: must be a queue name/);
    await expect(t.errand.pause({ kind: "" })).rejects.toThrow(/^kind: /);
    await expect(t.errand.pause({ queue: "a", kind: "b" } as never)).rejects.toThrow(/^target: must be \{ queue \} or \{ kind \}/);
    await expect(t.errand.resume(null as never)).rejects.toThrow(/^target: /);
    expect(await t.errand.paused()).toEqual({ queues: [], kinds: [] });
  });

  it("a paused kind is not claimed; resume runs it", async () => {
    const [held, other] = await t.errand.enqueueMany([{ kind: "held" }, { kind: "other" }]);
    await t.errand.pause({ kind: "held" });
    const ran: string[] = [];
    const worker = t.errand.worker({ handlers: { held: async (_, ctx) => void ran.push(ctx.id), other: async (_, ctx) => void ran.push(ctx.id) } });
    expect(await worker.runOnce()).toBe(1);
    expect(await worker.runOnce()).toBe(0);
    expect(ran).toEqual([other!.id]);
    expect((await rows())[0]).toMatchObject({ status: "ready", attempts: 0 });
    await t.errand.resume({ kind: "held" });
    expect(await worker.runOnce()).toBe(1);
    expect(ran).toEqual([other!.id, held!.id]);
  });

  for (const scope of ["queue", "kind"] as const) {
    it(`pausing a ${scope} during processing: the running job finishes, buffered ones go back unspent, resume drains them`, async () => {
      const slow = gated();
      const jobs = await t.errand.enqueueMany(Array.from({ length: 6 }, () => ({ kind: "k", queue: "q" })));
      const worker = t.errand.worker({ queues: { q: 1 }, prefetch: 5, rescueIntervalMs: 0, handlers: { k: slow.handler } });
      await worker.start();
      try {
        await eventually(async () => (await rows()).every((r) => r.status === "running"), 10_000, "one job running and five buffered");
        await t.errand.pause(scope === "queue" ? { queue: "q" } : { kind: "k" });
        await eventually(async () => (await rows()).filter((r) => r.status === "ready").length === 5, 10_000, "the five buffered jobs given back");
        const given = await rows();
        expect(given.map((r) => [r.status, r.attempts])).toEqual([["running", 1], ...Array.from({ length: 5 }, () => ["ready", 0])]);
        slow.open();
        await eventually(async () => (await rows())[0]!.status === "done", 10_000, "the running job done");
        // Paused: nothing else starts, however long the worker has free slots.
        const afterPause = slow.started.length;
        expect(afterPause).toBe(1);
        expect((await t.errand.stats()).queues.q).toMatchObject({ ready: 5, running: 0, paused: scope === "queue" });
        await t.errand.resume(scope === "queue" ? { queue: "q" } : { kind: "k" });
        await eventually(async () => (await rows()).every((r) => r.status === "done"), 10_000, "every job done after resume");
        expect((await rows()).map((r) => r.attempts)).toEqual(jobs.map(() => 1));
        expect(new Set(slow.started).size).toBe(6);
      } finally {
        slow.open();
        await worker.stop();
      }
    });
  }

  it("a worker started while one of its queues is paused claims nothing from it until resumed", async () => {
    await t.errand.pause({ queue: "default" });
    const [held] = await t.errand.enqueueMany([{ kind: "k" }]);
    const [side] = await t.errand.enqueueMany([{ kind: "k", queue: "side" }]);
    const ran: string[] = [];
    const worker = t.errand.worker({ queues: { default: 1, side: 1 }, handlers: { k: async (_, ctx) => void ran.push(ctx.id) } });
    await worker.start();
    try {
      // Both queues' claims start together: by the time the side job is done, the paused one's had its chance.
      await eventually(() => ran.includes(side!.id), 10_000, "the side queue's job done");
      expect((await rows())[0]).toMatchObject({ status: "ready", attempts: 0 });
      expect(ran).toEqual([side!.id]);
      await t.errand.resume({ queue: "default" });
      await eventually(async () => (await rows())[0]!.status === "done", 10_000, "the job done after resume");
      expect(ran).toEqual([side!.id, held!.id]);
    } finally {
      await worker.stop();
    }
  });
});
