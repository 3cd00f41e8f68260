import { expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import type { Driver, Statement } from "../../src/driver/types.js";
import { channelFor, insertedSince } from "../../src/sql/statement.js";
import { eventually, listenAsWaitingWorker, useTestErrand } from "../support/db.js";

const t = useTestErrand();

it("a notification that arrives while an empty claim is on its way back is not lost", async () => {
  // The first claim after start finds nothing; before its (empty) answer reaches the
  // worker, a job is enqueued and its notification delivered. With a ten-minute poll, only
  // that notification can make the worker look again.
  let claims = 0;
  let releaseFirstClaim!: () => void;
  const firstClaimHeld = new Promise<void>((resolve) => (releaseFirstClaim = resolve));
  let firstClaimAnswered!: () => void;
  const firstClaimDone = new Promise<void>((resolve) => (firstClaimAnswered = resolve));
  const driver: Driver = {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      const result = await t.errand.driver.run<Row>(statement, params);
      if (/FOR UPDATE SKIP LOCKED/.test(statement.text) && claims++ === 0) {
        firstClaimAnswered();
        await firstClaimHeld;
      }
      return result;
    },
    listen: (channel, onNotify, onReconnect) =>
      t.errand.driver.listen(
        channel,
        () => {
          onNotify();
          releaseFirstClaim();
        },
        onReconnect,
      ),
    close: async () => {},
  };
  const errand = Errand.fromDriver(driver, { schema: t.schema });
  const ran: string[] = [];
  const worker = errand.worker({ handlers: { ping: async (_payload, ctx) => void ran.push(ctx.id) }, pollIntervalMs: 600_000, rescueIntervalMs: 0 });
  await worker.start();
  await firstClaimDone;
  const { id } = await t.errand.enqueue("ping", {});
  await eventually(() => ran.includes(id), 10_000, "the job to run");
  await worker.stop();
  expect(ran).toEqual([id]);
});

it("a queue without keyed jobs costs no keyed claim per notification, and a keyed job enqueued later still runs at once", async () => {
  // With a ten-minute poll, only notifications can make this worker look: plain ones must
  // not cost a claim_keyed once it found no keyed job, and the keyed notice of an enqueue
  // with a concurrency key must bring the keyed claim back.
  let keyedClaims = 0;
  const driver: Driver = {
    ...t.errand.driver,
    run: <Row>(statement: Statement, params: readonly unknown[]) => {
      if (statement.text.includes("claim_keyed(")) keyedClaims++;
      return t.errand.driver.run<Row>(statement, params);
    },
    close: async () => {},
  };
  const errand = Errand.fromDriver(driver, { schema: t.schema });
  const ran: string[] = [];
  const worker = errand.worker({ handlers: { ping: async (_payload, ctx) => void ran.push(ctx.id) }, pollIntervalMs: 600_000, rescueIntervalMs: 0 });
  await worker.start();
  const { id: first } = await t.errand.enqueue("ping", {});
  await eventually(() => ran.includes(first), 10_000, "the first plain job to run");
  const afterFirst = keyedClaims;
  expect(afterFirst).toBeGreaterThanOrEqual(1); // it looked once and found no keyed job
  for (let i = 0; i < 5; i++) {
    const { id } = await t.errand.enqueue("ping", {});
    await eventually(() => ran.includes(id), 10_000, `plain job ${i} to run`);
  }
  expect(keyedClaims).toBe(afterFirst);
  const { id: keyed } = await t.errand.enqueue("ping", {}, { concurrencyKey: "tenant:1" });
  await eventually(() => ran.includes(keyed), 10_000, "the keyed job to run");
  const [batchMember] = (await t.errand.batch({ jobs: [{ kind: "ping", payload: {}, concurrencyKey: "tenant:2" }], then: { kind: "ping" } })).jobIds;
  await eventually(() => ran.includes(batchMember!), 10_000, "the keyed batch member to run");
  await worker.stop();
  expect(keyedClaims).toBeGreaterThan(afterFirst);
});

it("an insert's notice carries its transaction's start, once per transaction, in microseconds", async () => {
  // A worker lowers its claim floor to that start (src/worker/claim-floor.ts): the jobs'
  // run_at defaults to it, so it must be exact and never later.
  const payloads: (string | undefined)[] = [];
  const unlisten = await listenAsWaitingWorker(t, (payload) => payloads.push(payload));
  try {
    const startUs = await t.inTransaction(async (client) => {
      const { rows } = await client.query<{ us: string }>(`SELECT floor(extract(epoch FROM now()) * 1000000)::bigint::text AS us`);
      await client.query(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('a')`);
      await client.query(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('b'), ('c')`);
      return rows[0]!.us;
    });
    await eventually(() => payloads.length > 0, 5_000, "the notice");
    const [{ run_at_us } = { run_at_us: "" }] = await t.sql<{ run_at_us: string }>(
      `SELECT DISTINCT floor(extract(epoch FROM run_at) * 1000000)::bigint::text AS run_at_us FROM ${t.schema}.jobs`,
    );
    await t.errand.enqueue("d", {});
    await eventually(() => payloads.length > 1, 5_000, "the next transaction's notice");
    expect(payloads[0]).toBe(startUs);
    expect(run_at_us).toBe(startUs);
    expect(insertedSince(payloads[0])).toBe(Number(startUs));
    expect(Number(payloads[1])).toBeGreaterThanOrEqual(Number(startUs));
    // The first transaction's second insert added no notice: a listening worker is woken once.
    expect(payloads).toHaveLength(2);
    expect([undefined, "", "cancel", "returned", "-1", "1.5", "12345678901234567"].map(insertedSince)).toEqual(Array(7).fill(undefined));
  } finally {
    await unlisten();
  }
});

it("an enqueue of jobs given a run_at in the past also sends the earliest, in microseconds; one without sends nothing more", async () => {
  // Such jobs lie below busy workers' claim floors, which the transaction's start does not
  // reach (a schedule's missed slot, a runAt from a clock behind the server's).
  const payloads: string[] = [];
  const unlisten = await listenAsWaitingWorker(t, (payload) => payloads.push(payload ?? ""));
  const noticesAfter = async (enqueue: () => Promise<unknown>, count: number): Promise<string[]> => {
    const from = payloads.length;
    await enqueue();
    await eventually(() => payloads.length >= from + count, 5_000, `${count} notices`);
    return payloads.slice(from);
  };
  try {
    const earliest = new Date(Date.now() - 60_000);
    const later = new Date(Date.now() - 1_000);
    const us = (d: Date) => String(d.getTime() * 1000);
    const many = await noticesAfter(() => t.errand.enqueueMany([{ kind: "a", payload: {}, runAt: later }, { kind: "a", payload: {}, runAt: earliest }, { kind: "a", payload: {} }]), 2);
    expect(many).toContain(us(earliest));
    expect(many.map(insertedSince).every((v) => v !== undefined)).toBe(true);
    const keyed = await noticesAfter(() => t.errand.enqueue("a", {}, { runAt: later, dedupeKey: "past" }), 2);
    expect(keyed).toContain(us(later));
    const batch = await noticesAfter(() => t.errand.batch({ jobs: [{ kind: "a", payload: {}, runAt: earliest }], then: { kind: "done" } }), 2);
    expect(batch).toContain(us(earliest));
    // Jobs due now or later: the trigger's notice alone, one per enqueue (the count at the
    // end, after one more past job's two, shows that no other came).
    const plain = await noticesAfter(async () => {
      await t.errand.enqueue("a", {}, { runAt: new Date(Date.now() + 60_000) });
      await t.errand.enqueue("a", {}, { dedupeKey: "now" });
      await t.errand.enqueue("b", {});
    }, 3);
    await t.errand.enqueue("c", {}, { runAt: earliest });
    await eventually(() => payloads.length >= 11, 5_000, "the last enqueue's notices");
    expect(plain.map((p) => Number(p) >= Number(us(later)))).toEqual([true, true, true]);
    expect(payloads).toHaveLength(11);
  } finally {
    await unlisten();
  }
});


it("beside another enqueue in flight, an enqueue of a job given a run_at in the past sends that run_at after its commit", async () => {
  const payloads: string[] = [];
  const unlisten = await listenAsWaitingWorker(t, (payload) => payloads.push(payload ?? ""));
  try {
    const [earliest, later] = [new Date(Date.now() - 60_000), new Date(Date.now() - 1_000)];
    const us = (d: Date) => String(d.getTime() * 1000);
    // The first enqueue finds none out (its statement sends its notices); the second goes beside it.
    await Promise.all([t.errand.enqueue("a", {}, { runAt: earliest }), t.errand.enqueue("a", {}, { runAt: later })]);
    await eventually(() => payloads.includes(us(earliest)) && payloads.includes(us(later)), 5_000, "both run_ats");
  } finally {
    await unlisten();
  }
});


/** t.errand's driver, calling `each` before every statement it runs, with the number of its session (from 1) if on one. */
function recordingDriver(each: (statement: Statement, params: readonly unknown[], session?: number) => Promise<void> | void): Driver {
  let sessions = 0;
  return {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      await each(statement, params);
      return t.errand.driver.run<Row>(statement, params);
    },
    session: (fn) => {
      const session = ++sessions;
      return t.errand.driver.session((on) =>
        fn({
          ...on,
          run: async <Row>(statement: Statement, params: readonly unknown[]) => {
            await each(statement, params, session);
            return on.run<Row>(statement, params);
          },
        }),
      );
    },
    close: async () => {},
  };
}

/** Whether `statement` sends notices after an insert's commit (announceJobs). */
const announcing = (statement: { readonly text: string }): boolean => statement.text.includes("unnest($1::text[])");

it("beside another enqueue in flight, errand's own enqueue sends its notice after its commit, on an inserting connection; alone, at it", async () => {
  // Each enqueue wakes the workers once either way. Alone, the insert trigger's notice goes
  // at the commit (the soonest a worker can see the job); beside another, the statement
  // silences the trigger for its transaction and errand sends the notice once it has
  // committed (migration 023), on the connection of an insert that returned notices: through
  // the pool it would wait behind other inserts. The silence ends with that transaction: a
  // plain insert after it, on the same session where there is only one (PGlite), is notified again.
  const ran: { text: string; session?: number | undefined }[] = [];
  const errand = Errand.fromDriver(
    recordingDriver((statement, _, session) => void ran.push({ text: statement.text, session })),
    { schema: t.schema },
  );
  const after = () => ran.filter(({ text }) => text.includes("errand.jobs_notice"));
  const payloads: string[] = [];
  const unlisten = await listenAsWaitingWorker(t, (payload) => payloads.push(payload ?? ""));
  const sentinel = async (): Promise<void> => {
    await t.sql(`SELECT pg_notify('${channelFor(t.schema)}', 'sentinel')`);
    await eventually(() => payloads.includes("sentinel"), 5_000, "the sentinel");
  };
  try {
    const [alone] = await errand.enqueueMany([{ kind: "a", payload: {} }]);
    expect(after()).toHaveLength(0);
    const together = await Promise.all([errand.enqueue("b", {}), errand.enqueue("c", {}), errand.enqueue("d", {})]);
    expect(after()).toHaveLength(2);
    await errand.close(); // waits for the notices sent after the commits
    const sent = ran.filter(announcing);
    expect(sent).toHaveLength(2);
    for (const notice of sent) {
      expect(notice.session).toBeDefined();
      expect(ran.indexOf(notice)).toBeGreaterThan(ran.findIndex((entry) => entry.session === notice.session && entry.text.includes("errand.jobs_notice")));
    }
    await t.sql(`INSERT INTO ${t.schema}.jobs (kind) VALUES ('e')`);
    await eventually(() => payloads.length >= 5, 5_000, "five notices");
    await sentinel();
    expect(payloads).toHaveLength(6);
    // Each names its transaction's start, which is its job's run_at.
    const runAts = await t.sql<{ us: string }>(
      `SELECT floor(extract(epoch FROM run_at) * 1000000)::bigint::text AS us FROM ${t.schema}.jobs WHERE id = ANY($1::bigint[])`,
      [[alone!.id, ...together.map((job) => job.id)]],
    );
    expect(new Set(payloads.slice(0, 4))).toEqual(new Set(runAts.map((row) => row.us)));
  } finally {
    await unlisten();
  }
});

it("notices that come while one is being sent go together after it: the earliest time, and one keyed notice", async () => {
  // The first notice sent after a commit is held on its way; four more enqueues beside one
  // another commit meanwhile. Their notices wait and go in one statement: the earliest of
  // their transactions' starts (a worker's claim floor goes down to it; later ones add
  // nothing) and, as one of them is keyed, the keyed notice once. A worker waits, so the
  // inserts want their notices (see the next test).
  await t.sql(`INSERT INTO ${t.schema}.workers (id, queues, kinds) VALUES ('resting', '{default}', '{}')`);
  const sent: string[][] = [];
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const driver = recordingDriver(async (statement, params) => {
    if (!announcing(statement)) return;
    sent.push(params[0] as string[]);
    if (sent.length === 1) await held;
  });
  const errand = Errand.fromDriver(driver, { schema: t.schema });
  try {
    await Promise.all([errand.enqueue("a", {}), errand.enqueue("b", {})]); // b beside a: its notice is the held one
    expect(sent).toHaveLength(1);
    const [, ...beside] = await Promise.all([errand.enqueue("c", {}), errand.enqueue("d", {}), errand.enqueue("e", {}, { concurrencyKey: "k" }), errand.enqueue("f", {})]);
    expect(sent).toHaveLength(1); // all four committed (c alone: the trigger notified); the three beside wait
    release();
    await errand.close();
    expect(sent).toHaveLength(2);
    const [runAt] = await t.sql<{ us: string }>(
      `SELECT min(floor(extract(epoch FROM run_at) * 1000000)::bigint)::text AS us FROM ${t.schema}.jobs WHERE id = ANY($1::bigint[])`,
      [beside.map((job) => job.id)],
    );
    expect(sent[1]).toEqual([runAt!.us, "keyed"]);
  } finally {
    release();
    await errand.close();
  }
});

it("with no worker waiting, enqueues beside another send nothing after their commit but the keyed notice", async () => {
  // As the insert trigger (migration 025), errand's own enqueues send their transaction's
  // start only while a worker waits for it (jobs_notice_wanted, migration 026). The keyed
  // notice goes anyway: busy workers skip keyed claims until they hear it.
  const sent: string[][] = [];
  const driver = recordingDriver((statement, params) => void (announcing(statement) && sent.push(params[0] as string[])));
  const twice = async (options: { concurrencyKey?: string } = {}): Promise<void> => {
    const errand = Errand.fromDriver(driver, { schema: t.schema });
    await Promise.all([errand.enqueue("a", {}, options), errand.enqueue("b", {}, options)]);
    await errand.close(); // waits for the notices sent after the commits
  };
  await t.sql(`INSERT INTO ${t.schema}.workers (id, queues, kinds, waiting) VALUES ('busy', '{default}', '{}', false)`);
  await twice();
  expect(sent).toEqual([]);
  await twice({ concurrencyKey: "k" });
  expect(sent).toEqual([["keyed"]]);
  await t.sql(`UPDATE ${t.schema}.workers SET waiting = true`);
  await twice();
  expect(sent).toHaveLength(2);
  expect(sent[1]).toEqual([expect.stringMatching(/^\d{16}$/)]);
  expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.jobs`)).toEqual([{ n: 6 }]);
});
