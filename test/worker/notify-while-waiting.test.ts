import { expect, it } from "vitest";
import type { Driver, Statement } from "../../src/driver/types.js";
import { Worker } from "../../src/worker/worker.js";
import { busyWorker } from "../support/busy-worker.js";
import { eventually, listenForNotices, useTestErrand } from "../support/db.js";

const t = useTestErrand();

const plainInsert = () => t.sql(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('a')`);

it("the insert trigger notifies while a worker waits, and otherwise only when a notice is needed anyway", async () => {
  // A notifying commit queues behind a lock the whole server shares (migration 025): inserts
  // with no worker waiting commit without it.
  const { noticesOf, unlisten } = await listenForNotices(t);
  try {
    // No worker registered: no notice, from plain SQL or from errand.
    expect(await noticesOf(plainInsert)).toEqual([]);
    expect(await noticesOf(() => t.errand.enqueue("a", {}))).toEqual([]);
    // A worker that does not wait (its claims keep finding jobs): none either.
    await t.sql(`INSERT INTO ${t.schema}.workers (id, queues, kinds, waiting) VALUES ('busy', '{default}', '{a}', false)`);
    expect(await noticesOf(plainInsert)).toEqual([]);
    // A transaction that is not READ COMMITTED may not see a worker start waiting: it notifies.
    const repeatable = await noticesOf(() =>
      t.inTransaction(async (client) => {
        await client.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
        await client.query(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('a')`);
      }),
    );
    expect(repeatable).toHaveLength(1);
    // A transaction that began longer than the claim's slack before its insert: its jobs'
    // run_at may lie below where busy workers claim, and the notice says where.
    const late = await noticesOf(() =>
      t.inTransaction(async (client) => {
        await client.query("SELECT pg_sleep(0.15)");
        await client.query(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('a')`);
      }),
    );
    expect(late).toHaveLength(1);
    // A worker waits: every inserting transaction notifies once, as before migration 025.
    await t.sql(`INSERT INTO ${t.schema}.workers (id, queues, kinds) VALUES ('resting', '{default}', '{a}')`);
    expect(await noticesOf(plainInsert)).toHaveLength(1);
    expect(await noticesOf(() => t.errand.enqueue("a", {}))).toHaveLength(1);
  } finally {
    await unlisten();
  }
});

it("a waiting worker's row not refreshed for a minute, as a killed worker leaves it, no longer makes inserts notify", async () => {
  const { noticesOf, unlisten } = await listenForNotices(t);
  try {
    await t.sql(`INSERT INTO ${t.schema}.workers (id, queues, kinds) VALUES ('killed', '{default}', '{a}')`);
    expect(await noticesOf(plainInsert)).toHaveLength(1);
    // A running worker refreshes its row every 15 s; stats count it live for 60 s after.
    await t.sql(`UPDATE ${t.schema}.workers SET seen_at = now() - interval '59 seconds'`);
    expect(await noticesOf(plainInsert)).toHaveLength(1);
    expect(await noticesOf(() => t.errand.enqueue("a", {}))).toHaveLength(1);
    await t.sql(`UPDATE ${t.schema}.workers SET seen_at = now() - interval '61 seconds'`);
    expect(await noticesOf(plainInsert)).toEqual([]);
    expect(await noticesOf(() => t.errand.enqueue("a", {}))).toEqual([]);
  } finally {
    await unlisten();
  }
});

it("a waiting worker whose row went a minute without a refresh claims, as it refreshes, a job inserted unannounced meanwhile", async () => {
  let now = 1_000_000;
  const ran: string[] = [];
  // At rest once it has asked when its next job is due (after its first claims found none).
  let rested!: () => void;
  const atRest = new Promise<void>((resolve) => (rested = resolve));
  const driver: Driver = {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      const result = await t.errand.driver.run<Row>(statement, params);
      if (statement.text.includes("AS plain_ms")) rested();
      return result;
    },
  };
  const worker = new Worker(driver, t.schema, t.errand.kinds, {
    workerId: "stalled",
    // Only a notice or the refresh can find the job: the poll is ten minutes.
    pollIntervalMs: 600_000,
    rescueIntervalMs: 0,
    handlers: { a: async (_payload, ctx) => void ran.push(ctx.id) },
  }, { now: () => now });
  try {
    await worker.start();
    await atRest;
    const seenAt = async () => (await t.sql<{ seen: string }>(`SELECT seen_at::text AS seen FROM ${t.schema}.workers WHERE id = 'stalled' AND waiting`))[0]?.seen;
    // Its process stalled for a minute (SQL time travel): its row stopped counting.
    await t.sql(`UPDATE ${t.schema}.workers SET seen_at = now() - interval '61 seconds'`);
    const before = await seenAt();
    expect(before).toBeDefined();
    // No notice (the test before); none of ours either, which the worker would take for one.
    const [{ id } = { id: "" }] = await t.sql<{ id: string }>(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('a') RETURNING id::text AS id`);
    // Its clock moved on by more than the 15 s between refreshes: its 1 s timer refreshes the row.
    now += 16_000;
    await eventually(() => ran.includes(id), 5_000, "the job inserted unannounced to run");
    expect(await seenAt()).not.toBe(before);
  } finally {
    await worker.stop();
  }
});

it("a worker waits for notices at rest, stops once its claims keep finding jobs while inserts notify often, and waits again when its queue is empty", async () => {
  const id = "notice-test-worker";
  const busy = await busyWorker(t, t.errand, id);
  // Busy, but no insert has notified it yet: it waits.
  expect(await busy.waiting()).toBe(true);
  // Busy for a second (the worker's timer looks every second) while inserts notify often: it stops waiting.
  await busy.insertUntilQuiet();
  // An insert made now is not announced; the worker claims it once its slot is free.
  const { id: quick } = await t.errand.enqueue("quick", {});
  busy.release();
  await eventually(() => busy.ran.includes(quick), 5_000, "the quick job to run");
  // Its queue empty, it waits again, and a job enqueued now wakes it (the poll is ten minutes).
  await eventually(async () => (await busy.waiting()) === true, 5_000, "the worker to wait again");
  const { id: next } = await t.errand.enqueue("quick", {});
  await eventually(() => busy.ran.includes(next), 5_000, "the next job to run");
  await busy.worker.stop();
  expect(await busy.waiting()).toBeUndefined();
  expect(busy.ran).toEqual([quick, next]);
});

it("a busy worker that hears fewer than 50 insert notices a second keeps waiting for them", async () => {
  let now = 1_000_000;
  const busy = await busyWorker(t, t.errand, "few-notices", { clock: { now: () => now } });
  try {
    // 48 inserts, each notified (the worker waits), each of a kind it does not run: with the
    // slow job's, 49 notices in all, however the timer's seconds divide them.
    for (let i = 0; i < 48; i++) await t.sql(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('elsewhere')`);
    // Busy for well over a second on its clock. The worker's timer looks every second of
    // real time; moved 15 s on, it also refreshes its row, which shows that it looked.
    const seenAt = async () => (await t.sql<{ seen: string }>(`SELECT seen_at::text AS seen FROM ${t.schema}.workers WHERE id = 'few-notices'`))[0]?.seen;
    for (let look = 0; look < 2; look++) {
      const before = await seenAt();
      now += 16_000;
      await eventually(async () => (await seenAt()) !== before, 5_000, "the worker's timer to look");
    }
    expect(busy.worker.activeCount).toBe(1);
    expect(await busy.waiting()).toBe(true);
  } finally {
    busy.release();
    await busy.worker.stop();
  }
});

it("a busy worker with a keyed job due and no slot free still stops waiting while inserts notify often", async () => {
  // Room to claim ahead, but a keyed claim is due (a keyed job waits) and keyed jobs are
  // claimed only for free slots: each notice's round of the claim loop claims nothing. Such
  // a round is not an empty queue; counted as one, it kept the worker waiting.
  const busy = await busyWorker(t, t.errand, "keyed-due", { prefetch: 4 });
  try {
    const { id: keyed } = await t.errand.enqueue("quick", {}, { concurrencyKey: "k" });
    await busy.insertUntilQuiet();
    busy.release();
    await eventually(() => busy.ran.includes(keyed), 5_000, "the keyed job to run once the slot is free");
  } finally {
    busy.release();
    await busy.worker.stop();
  }
});
