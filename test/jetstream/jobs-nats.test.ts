import { afterEach, beforeEach, expect, it } from "vitest";
import { jetstream } from "@nats-io/jetstream";
import { JetStreamQueue, type JetStreamWorker, type JetStreamWorkerEvent, PermanentError, type Relay, ValidationError, snooze } from "../../src/index.js";
import { testJobStream } from "../support/brokers.js";
import { eventually, useTestErrand } from "../support/db.js";
import { natsUrl } from "../support/services.js";
import { Registry } from "prom-client";
import { registerJetStreamGauges } from "../../src/metrics.js";
import { attemptErrorsStream } from "../../src/jetstream/attempt-errors.js";

// JetStream as a job transport, against the real NATS server and both databases: jobs
// enqueued in PostgreSQL's outbox, relayed to a work-queue stream, run with errand's
// handler API; dead jobs in PostgreSQL's jobs table.
const t = useTestErrand({ kinds: { flaky: { retry: { baseDelayMs: 300, jitter: 0 }, maxAttempts: 3 } } });
let stream: Awaited<ReturnType<typeof testJobStream>>;
const stops: (() => Promise<void>)[] = [];
beforeEach(async () => {
  stream = await testJobStream();
});
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  await stream.close();
});

function queue(options: { ackWaitMs?: number; maxPayloadBytes?: number } = {}) {
  return new JetStreamQueue(t.errand, { queue: "media", servers: natsUrl, stream: stream.name, subjectPrefix: stream.subjectPrefix, ...options });
}

async function relay(): Promise<Relay> {
  const r = t.errand.relay({ to: natsUrl, stream: stream.name, subjectPrefix: stream.subjectPrefix, pollIntervalMs: 50 });
  await r.start();
  stops.push(() => r.stop());
  return r;
}

async function start(worker: JetStreamWorker): Promise<JetStreamWorker> {
  await worker.start();
  stops.push(() => worker.stop());
  return worker;
}

/** A worker's finished events, and each job's start times (ms, monotonic), by id. */
function recorder() {
  const finished: Extract<JetStreamWorkerEvent, { type: "finished" }>[] = [];
  const starts = new Map<string, number[]>();
  const onEvent = (event: JetStreamWorkerEvent) => {
    if (event.type === "finished") finished.push(event);
    if (event.type === "started") starts.set(event.id, [...(starts.get(event.id) ?? []), performance.now()]);
  };
  return { finished, starts, onEvent };
}

const outbox = async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.outbox`))[0]!.n;
const deadRows = () => t.sql<{ kind: string; payload: unknown; attempts: number; max_attempts: number; queue: string; last_error: string }>(`SELECT kind, payload, attempts, max_attempts, queue, last_error FROM ${t.schema}.all_jobs WHERE status = 'dead' ORDER BY id`);

it("runs jobs committed in the caller's transaction once each, with the handler's context; a rolled-back job never exists", async () => {
  const media = queue();
  await t.inTransaction((db) => media.enqueueMany(Array.from({ length: 50 }, (_, n) => ({ kind: "resize", payload: { n } })), { db }));
  await t.inTransaction((db) => media.enqueue("resize", { n: 999 }, { db }), false);
  const seen: { n: number; attempt: number; id: string; key: string }[] = [];
  const r = recorder();
  await start(media.worker({ handlers: { resize: ({ n }: { n: number }, ctx) => void seen.push({ n, attempt: ctx.attempt, id: ctx.id, key: ctx.idempotencyKey }) }, onEvent: r.onEvent }));
  await relay();
  await eventually(() => r.finished.length === 50, 30_000, "50 jobs done");
  expect(seen.map((s) => s.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, n) => n));
  expect(new Set(seen.map((s) => s.id)).size).toBe(50);
  expect(seen.every((s) => s.attempt === 1 && /^\d+$/.test(s.id) && s.key === `errand-job-${s.id}`)).toBe(true);
  expect(r.finished.every((f) => f.outcome === "done")).toBe(true);
  await eventually(async () => (await stream.count()) === 0, 10_000, "the work queue emptied by the acks");
  expect(await media.stats()).toEqual({ queue: "media", pending: 0, ackPending: 0, redelivered: 0, waiting: expect.any(Number) as unknown, outbox: 0 });
});

it("stats and metrics count the jobs in the outbox, then pending in the stream, before a worker runs them", async () => {
  const media = queue();
  const w = media.worker({ handlers: { resize: () => {} } });
  await w.start(); // creates the consumer
  await w.stop();
  await media.enqueueMany([{ kind: "resize", payload: {} }, { kind: "resize", payload: {} }]);
  expect(await media.stats()).toMatchObject({ pending: 0, outbox: 2 });
  await (await relay()).runOnce();
  await eventually(async () => (await media.stats()).pending === 2, 10_000, "2 pending in the stream");
  expect((await media.stats()).outbox).toBe(0);
  const registry = new Registry();
  registerJetStreamGauges(registry, [media]);
  const text = await registry.metrics();
  expect(text).toContain('errand_jetstream_jobs{queue="media",state="pending"} 2');
  expect(text).toContain('errand_jetstream_jobs{queue="media",state="outbox"} 0');
  expect(text).toContain('errand_jetstream_up{queue="media"} 1');
});

it("retries a failed job after errand's backoff (a delayed negative ack), then it succeeds", async () => {
  const media = queue();
  await media.enqueue("flaky", { x: 1 });
  const attempts: number[] = [];
  const r = recorder();
  await start(media.worker({ handlers: { flaky: (_: unknown, ctx) => { attempts.push(ctx.attempt); if (ctx.attempt === 1) throw new Error("first try fails"); } }, onEvent: r.onEvent }));
  await relay();
  await eventually(() => r.finished.some((f) => f.outcome === "done"), 20_000, "done on the retry");
  expect(attempts).toEqual([1, 2]);
  expect(r.finished.map((f) => f.outcome)).toEqual(["retry", "done"]);
  const [first, second] = [...r.starts.values()][0]!;
  // The kind's policy: 300 ms, no jitter.
  expect(second! - first!).toBeGreaterThanOrEqual(280);
  expect(await deadRows()).toEqual([]);
});

it("a job failing its last attempt lands dead in PostgreSQL; errand.dead.retry sends it back through the outbox to JetStream", async () => {
  const media = queue();
  const { id } = await media.enqueue("flaky", { photo: 7 });
  let healed = false;
  const r = recorder();
  await start(media.worker({ handlers: { flaky: (_: unknown, ctx) => { if (!healed) throw new Error(`broken on attempt ${ctx.attempt}`); } }, onEvent: r.onEvent, forwardIntervalMs: 100 }));
  await relay();
  await eventually(() => r.finished.some((f) => f.outcome === "dead"), 20_000, "the job dead");
  expect(r.finished.map((f) => f.outcome)).toEqual(["retry", "retry", "dead"]);
  const [dead] = await deadRows();
  expect(dead).toMatchObject({ kind: "flaky", payload: { photo: 7 }, attempts: 3, max_attempts: 3, queue: "media" });
  expect(dead!.last_error).toContain("broken on attempt 3");
  const listed = await t.errand.dead.list();
  expect(listed).toHaveLength(1);
  // Every attempt's error, as on PostgreSQL: the earlier ones kept in JetStream until the job went dead.
  expect(listed[0]!.errors.map((e) => [e.attempt, /broken on attempt (\d)/.exec(e.error)?.[1]])).toEqual([[1, "1"], [2, "2"], [3, "3"]]);
  expect(listed[0]!.errors.every((e) => (e as { transport?: string }).transport === "jetstream" && !Number.isNaN(Date.parse(String(e.at))))).toBe(true);
  expect(listed[0]!.errors[2]).toMatchObject({ messageId: id });
  const kept = (attempt: number) => stream.jsm.streams.getMessage(attemptErrorsStream, { last_by_subj: `errand_attempt_errors.${stream.name}.errand_media.${id}.${attempt}` }).catch(() => null);
  await eventually(async () => (await kept(1)) === null && (await kept(2)) === null, 10_000, "the kept errors deleted once the dead row holds them");
  await eventually(async () => (await stream.count()) === 0, 10_000, "the dead job's message gone from the work queue");

  healed = true;
  expect(await t.errand.dead.retry({ ids: [listed[0]!.id] })).toEqual([listed[0]!.id]);
  await eventually(() => r.finished.at(-1)?.outcome === "done", 20_000, "the retried job done on JetStream");
  expect(r.finished.at(-1)).toMatchObject({ kind: "flaky", attempt: 1 });
  expect(await t.sql(`SELECT id FROM ${t.schema}.all_jobs`)).toEqual([]);
});

it("a PermanentError makes the job dead at once; a snooze comes back after its delay", async () => {
  const media = queue();
  await media.enqueueMany([{ kind: "refuse", payload: { why: "no" } }, { kind: "later", payload: {} }]);
  const r = recorder();
  const ran: string[] = [];
  await start(
    media.worker({
      handlers: {
        refuse: () => { throw new PermanentError("not a photo"); },
        later: (_: unknown, ctx) => { ran.push(`later@${ctx.attempt}`); return ctx.attempt === 1 ? snooze(200) : undefined; },
      },
      onEvent: r.onEvent,
    }),
  );
  await relay();
  await eventually(() => r.finished.length === 3, 20_000, "three outcomes");
  expect(r.finished.map((f) => `${f.kind}:${f.outcome}`).sort()).toEqual(["later:done", "later:snoozed", "refuse:dead"]);
  expect(ran).toEqual(["later@1", "later@2"]);
  expect(await deadRows()).toEqual([expect.objectContaining({ kind: "refuse", attempts: 1, max_attempts: 8, last_error: expect.stringContaining("not a photo") as unknown })]);
});

it("heartbeats hold the lease past the ack wait: a handler running 3 ack waits runs once", async () => {
  const media = queue({ ackWaitMs: 1_000 });
  await media.enqueue("slow", {});
  const r = recorder();
  await start(media.worker({ handlers: { slow: () => new Promise((resolve) => setTimeout(resolve, 3_000)) }, onEvent: r.onEvent }));
  await relay();
  await eventually(() => r.finished.length === 1, 20_000, "the slow job done");
  expect(r.finished[0]).toMatchObject({ outcome: "done", attempt: 1 });
  expect([...r.starts.values()]).toEqual([[expect.any(Number)]]);
  expect((await media.stats()).redelivered).toBe(0);
});

it("a job whose worker stopped heartbeating is delivered again after the ack wait, as its next attempt", async () => {
  const media = queue({ ackWaitMs: 1_000 });
  const first = media.worker({ handlers: { job: () => {} } });
  await first.start(); // creates the consumer
  await first.stop();
  await media.enqueue("job", {});
  await (await relay()).runOnce();
  // A worker that took the job and hung without heartbeats (or was killed).
  const consumer = await jetstream(stream.nc).consumers.get(stream.name, media.settings.consumer);
  const taken = await consumer.next({ expires: 5_000 });
  expect(taken?.info.deliveryCount).toBe(1);
  const takenAt = performance.now();
  const r = recorder();
  await start(media.worker({ handlers: { job: () => {} }, onEvent: r.onEvent }));
  await eventually(() => r.finished.length === 1, 20_000, "the job run by the second worker");
  expect(r.finished[0]).toMatchObject({ outcome: "done", attempt: 2 });
  expect(r.starts.values().next().value![0]! - takenAt).toBeGreaterThanOrEqual(900);
});

it("graceful shutdown: stops pulling, lets running handlers finish and acknowledges them; past the deadline the job goes back for another worker", async () => {
  const media = queue();
  await media.enqueueMany([{ kind: "finish", payload: {} }, { kind: "hang", payload: {} }]);
  const r = recorder();
  let aborted: unknown;
  const worker = media.worker({
    handlers: {
      finish: () => new Promise((resolve) => setTimeout(resolve, 400)),
      hang: (_: unknown, ctx) => new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject((aborted = ctx.signal.reason as Error)))),
    },
    shutdownTimeoutMs: 1_000,
    onEvent: r.onEvent,
  });
  await worker.start();
  await relay();
  await eventually(() => r.starts.size === 2, 20_000, "both running");
  await worker.stop();
  expect(r.finished.map((f) => `${f.kind}:${f.outcome}`).sort()).toEqual(["finish:done", "hang:returned"]);
  expect(aborted).toMatchObject({ code: "shutdown" });
  const after = recorder();
  await start(media.worker({ handlers: { hang: () => {} }, onEvent: after.onEvent }));
  await eventually(() => after.finished.length === 1, 10_000, "the returned job run by the next worker");
  expect(after.finished[0]).toMatchObject({ kind: "hang", outcome: "done" });
  expect(await deadRows()).toEqual([]);
});

it("refuses bad input with a clear error and writes nothing", async () => {
  const media = queue({ maxPayloadBytes: 1_000 });
  await expect(media.enqueue("resize", { blob: "x".repeat(2_000) })).rejects.toThrow(ValidationError);
  await expect(media.enqueue("resize", { blob: "x".repeat(2_000) })).rejects.toThrow(/^payload: .*over the limit of 1000/);
  await expect(media.enqueueMany([{ kind: "resize", payload: {} }, { kind: "", payload: {} }])).rejects.toThrow(/^jobs\[1\]\.kind: /);
  expect(await outbox()).toBe(0);
  const bad = (options: object) => () => new JetStreamQueue(t.errand, { queue: "media", servers: natsUrl, stream: stream.name, ...options });
  expect(bad({ queue: "no spaces" })).toThrow(/^queue: must be a queue name/);
  expect(bad({ topic: "jobs.>" })).toThrow(/^topic: .*wildcards/);
  expect(bad({ servers: "amqp://guest:guest@127.0.0.1:5672" })).toThrow(/^servers: must be a NATS URL/);
  expect(bad({ stream: "A.B" })).toThrow(/^stream: must be a JetStream name/);
  expect(bad({ ackWaitMs: 0 })).toThrow(/^ackWaitMs: /);
});

it("refuses to start on a stream that cannot carry the queue, saying why", async () => {
  const startOn = async (streamName: string, extra: object = {}) => {
    const w = new JetStreamQueue(t.errand, { queue: "media", servers: natsUrl, stream: streamName, subjectPrefix: stream.subjectPrefix, ...extra }).worker({ handlers: {} });
    await expect(w.start()).rejects.toMatchObject({ code: "broker_unreachable" });
    return w.start().catch((error: Error) => error.message);
  };
  expect(await startOn("NO_SUCH_STREAM")).toMatch(/stream 'NO_SUCH_STREAM' is not usable .*create it first as a work queue capturing j\w+\.errand\.jobs\.media/);
  const limits = await testJobStream({ retention: "limits" });
  stops.push(() => limits.close());
  expect(await startOn(limits.name, { subjectPrefix: limits.subjectPrefix })).toMatch(/retention is 'limits'; a job queue needs a work-queue stream/);
  expect(await startOn(stream.name, { topic: "other.jobs", subjectPrefix: undefined })).toMatch(/do not capture the queue's subject other\.jobs/);
  const small = await testJobStream({ max_msg_size: 4_096 });
  stops.push(() => small.close());
  expect(await startOn(small.name, { subjectPrefix: small.subjectPrefix })).toMatch(/max_msg_size \(4096 bytes\) is below the queue's maxPayloadBytes \(262144\)/);
  expect(await startOn(small.name, { subjectPrefix: small.subjectPrefix, maxPayloadBytes: 1_024 }).catch(() => "started")).not.toMatch(/max_msg_size/);
  await expect(new JetStreamQueue(t.errand, { queue: "media", servers: "nats://127.0.0.1:1", stream: stream.name }).worker({ handlers: {} }).start()).rejects.toThrow(/^cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/);
});
