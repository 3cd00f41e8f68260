import { describe, expect, it } from "vitest";
import { Errand, ValidationError } from "../../src/index.js";
import type { Driver, Statement } from "../../src/driver/types.js";
import { queriesFor } from "../../src/sql/jobs.js";
import { limitQueriesFor } from "../../src/sql/limits.js";
import { eventually, useTestErrand } from "../support/db.js";

const t = useTestErrand();

const statuses = () => t.sql<{ status: string; attempts: number }>(`SELECT status, attempts FROM ${t.schema}.all_jobs ORDER BY id`);

/** Handlers that count how many run at once (in this process: every worker of the test). */
function counted(ms: number) {
  let now = 0;
  let most = 0;
  const handler = async () => {
    most = Math.max(most, ++now);
    await new Promise((resolve) => setTimeout(resolve, ms));
    now--;
  };
  return { handler, most: () => most };
}

/** t.errand's driver, awaiting `before` ahead of each statement and giving each result's rows to `after`. */
function watched(before: (statement: Statement) => Promise<void> | void, after: (statement: Statement, rows: readonly unknown[]) => void): Driver {
  return {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      await before(statement);
      const result = await t.errand.driver.run<Row>(statement, params);
      after(statement, result.rows);
      return result;
    },
    close: async () => {},
  };
}

/** For the worker's read of its queues' pauses and limits (the read it makes on the notice): whether it found a limit; else undefined. */
const limitIn = (statement: Statement, rows: readonly unknown[]): boolean | undefined =>
  statement.text.includes("'limit'") ? rows.some((row) => (row as { scope: string }).scope === "limit") : undefined;

describe("a global concurrency limit per queue", () => {
  it("holds across workers, counts keyed and unkeyed jobs together, and loses nothing", async () => {
    await t.errand.limits.setQueue("email", { concurrency: 3 });
    await t.errand.enqueueMany(Array.from({ length: 30 }, (_, i) => ({ kind: "send", queue: "email", ...(i % 3 === 0 ? { concurrencyKey: `tenant:${i % 2}` } : {}) })));
    const send = counted(20);
    const workers = [0, 1].map(() => t.errand.worker({ queues: { email: 5 }, prefetch: 5, rescueIntervalMs: 0, handlers: { send: send.handler } }));
    await Promise.all(workers.map((w) => w.start()));
    try {
      await eventually(async () => (await statuses()).every((r) => r.status === "done"), 30_000, "every job done");
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    expect(send.most()).toBe(3); // 10 handler slots between the two workers, 3 used at most
    expect((await statuses()).map((r) => r.attempts)).toEqual(Array.from({ length: 30 }, () => 1));
    expect(await t.errand.limits.listQueues()).toEqual([{ queue: "email", concurrency: 3, running: 0 }]);
  });

  it("counts the jobs already running when it is set, whichever claim started them", async () => {
    await t.errand.enqueueMany([
      { kind: "send", queue: "email" },
      { kind: "send", queue: "email", concurrencyKey: "tenant:1" },
      { kind: "send", queue: "email" },
    ]);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // An unlimited worker starts all three: the plain claim leaves queue_running unset.
    const worker = t.errand.worker({ queues: { email: 3 }, rescueIntervalMs: 0, handlers: { send: () => gate } });
    await worker.start();
    try {
      await eventually(async () => (await statuses()).every((r) => r.status === "running"), 10_000, "all three running");
      await t.errand.limits.setQueue("email", { concurrency: 2 });
      expect(await t.errand.limits.listQueues()).toEqual([{ queue: "email", concurrency: 2, running: 3 }]);
    } finally {
      release();
      await worker.stop();
    }
    expect(await t.errand.limits.listQueues()).toEqual([{ queue: "email", concurrency: 2, running: 0 }]);
  });

  it("a running worker learns a new limit, and its removal", async () => {
    let limitsRead: boolean | undefined;
    const driver = watched(() => {}, (statement, rows) => (limitsRead = limitIn(statement, rows) ?? limitsRead));
    const send = counted(20);
    const worker = Errand.fromDriver(driver, { schema: t.schema }).worker({ queues: { email: 6 }, rescueIntervalMs: 0, handlers: { send: send.handler } });
    await worker.start();
    try {
      await t.errand.limits.setQueue("email", { concurrency: 2 });
      await eventually(() => limitsRead === true, 10_000, "the worker read the limit");
      await t.errand.enqueueMany(Array.from({ length: 12 }, () => ({ kind: "send", queue: "email" })));
      await eventually(async () => (await statuses()).every((r) => r.status === "done"), 30_000, "every job done");
      expect(send.most()).toBe(2);
      expect(await t.errand.limits.removeQueue("email")).toBe(true);
      expect(await t.errand.limits.removeQueue("email")).toBe(false);
      await eventually(() => limitsRead === false, 10_000, "the worker read the removal");
      await t.errand.enqueueMany(Array.from({ length: 12 }, () => ({ kind: "send", queue: "email" })));
      await eventually(async () => (await statuses()).every((r) => r.status === "done"), 30_000, "every job done");
      expect(send.most()).toBeGreaterThan(2);
    } finally {
      await worker.stop();
    }
  });

  it("a plain claim out when the limit lands gives its jobs back unspent, for the limited claim", async () => {
    const { claim, claimFrom } = queriesFor(t.schema);
    let limitsRead: boolean | undefined;
    let held: Promise<void> | undefined;
    let claimHeld!: () => void;
    const driver = watched(
      async (statement) => {
        // The plain claim waits (as behind a busy pool) until the test lets it run.
        if (held && (statement === claim || statement === claimFrom)) {
          claimHeld();
          await held;
        }
      },
      (statement, rows) => (limitsRead = limitIn(statement, rows) ?? limitsRead),
    );
    const send = counted(20);
    const worker = Errand.fromDriver(driver, { schema: t.schema }).worker({ queues: { email: 6 }, rescueIntervalMs: 0, handlers: { send: send.handler } });
    await worker.start();
    try {
      await eventually(() => limitsRead === false, 10_000, "the worker read no limit");
      let release!: () => void;
      held = new Promise<void>((resolve) => (release = resolve));
      const claimOut = new Promise<void>((resolve) => (claimHeld = resolve));
      await t.errand.enqueue("send", {}, { queue: "email" });
      await claimOut;
      await t.errand.limits.setQueue("email", { concurrency: 2 });
      await eventually(() => limitsRead === true, 10_000, "the worker read the limit");
      await t.errand.enqueueMany(Array.from({ length: 11 }, () => ({ kind: "send", queue: "email" })));
      held = undefined;
      release();
      await eventually(async () => (await statuses()).every((r) => r.status === "done"), 30_000, "every job done");
    } finally {
      await worker.stop();
    }
    expect(send.most()).toBe(2);
    expect((await statuses()).map((r) => r.attempts)).toEqual(Array.from({ length: 12 }, () => 1));
  });

  it("jobs a plain claim started after the limit was set, before the worker heard, count against it", async () => {
    const { claimLimited } = limitQueriesFor(t.schema);
    let heard: Promise<void> | undefined;
    /** Rows of each limited claim, in order. */
    const limitedClaims: number[] = [];
    const driver = watched(
      async (statement) => {
        // The worker's read of its queues' limits waits (as behind a lost notice) until the test lets it run.
        if (heard && statement.text.includes("'limit'")) await heard;
      },
      (statement, rows) => {
        if (statement === claimLimited) limitedClaims.push(rows.filter((row) => (row as { id: unknown }).id !== null).length);
      },
    );
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const worker = Errand.fromDriver(driver, { schema: t.schema }).worker({ queues: { email: 6 }, rescueIntervalMs: 0, handlers: { send: () => gate } });
    await worker.start();
    try {
      let hear!: () => void;
      heard = new Promise<void>((resolve) => (hear = resolve));
      await t.errand.limits.setQueue("email", { concurrency: 2 });
      await t.errand.enqueueMany(Array.from({ length: 4 }, () => ({ kind: "send", queue: "email" })));
      await eventually(async () => (await statuses()).every((r) => r.status === "running"), 10_000, "four running, claimed plain");
      expect(await t.errand.limits.listQueues()).toEqual([{ queue: "email", concurrency: 2, running: 0 }]);
      heard = undefined;
      hear();
      await eventually(async () => (await t.errand.limits.listQueues())[0]?.running === 4, 10_000, "the four counted");
      await t.errand.enqueueMany(Array.from({ length: 2 }, () => ({ kind: "send", queue: "email" })));
      // A limited claim that began after these were enqueued finds no place for them.
      const claimsBefore = limitedClaims.length;
      await eventually(() => limitedClaims.length > claimsBefore + 1, 10_000, "two limited claims since");
      expect(limitedClaims.slice(claimsBefore)).toEqual(limitedClaims.slice(claimsBefore).map(() => 0));
      expect((await statuses()).map((r) => r.status)).toEqual(["running", "running", "running", "running", "ready", "ready"]);
    } finally {
      open();
      await worker.stop();
    }
  });

  it.each([
    [{ concurrency: 0 }, "concurrency", /from 1/],
    [{ concurrency: -1 }, "concurrency", /from 1/],
    [{ concurrency: 2.5 }, "concurrency", /integer/],
    [{}, "concurrency", /give the queue's limit/],
    [{ concurency: 2 }, "options.concurency", /did you mean 'concurrency'/],
  ])("setQueue(%j) fails naming %s, nothing written", async (options, field, message) => {
    const error = await t.errand.limits.setQueue("email", options as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ field });
    expect((error as Error).message).toMatch(message);
    expect(await t.sql(`SELECT 1 FROM ${t.schema}.queue_limits`)).toEqual([]);
  });

  it("refuses a bad queue name, naming the field", async () => {
    await expect(t.errand.limits.setQueue("no spaces", { concurrency: 1 })).rejects.toMatchObject({ field: "queue" });
    await expect(t.errand.limits.removeQueue("")).rejects.toMatchObject({ field: "queue" });
    expect(await t.sql(`SELECT 1 FROM ${t.schema}.queue_limits`)).toEqual([]);
  });
});
