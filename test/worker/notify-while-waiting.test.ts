import { expect, it } from "vitest";
import { channelFor } from "../../src/sql/statement.js";
import { busyWorker } from "../support/busy-worker.js";
import { eventually, useTestErrand } from "../support/db.js";

const t = useTestErrand();

it("the insert trigger notifies while a worker waits, and otherwise only when a notice is needed anyway", async () => {
  // A notifying commit queues behind a lock the whole server shares (migration 025): inserts
  // with no worker waiting commit without it. Each step ends with a sentinel notice, so a
  // notice the insert did not send cannot arrive later unseen.
  const payloads: string[] = [];
  const channel = channelFor(t.schema);
  const unlisten = await t.errand.driver.listen(channel, (payload) => payloads.push(payload ?? ""));
  let sentinels = 0;
  const noticesOf = async (insert: () => Promise<unknown>): Promise<string[]> => {
    const from = payloads.length;
    await insert();
    const sentinel = `sentinel ${++sentinels}`;
    await t.sql(`SELECT pg_notify('${channel}', '${sentinel}')`);
    await eventually(() => payloads.includes(sentinel), 5_000, sentinel);
    return payloads.slice(from, payloads.indexOf(sentinel));
  };
  const plainInsert = () => t.sql(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('a')`);
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
