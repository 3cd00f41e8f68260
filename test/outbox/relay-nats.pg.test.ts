import { afterEach, beforeEach, expect, it } from "vitest";
import { ErrandError } from "../../src/index.js";
import { checkOrderPerKey, outboxBacklog, testStream } from "../support/brokers.js";
import { eventually, testErrand, useTestErrand } from "../support/db.js";
import { natsUrl } from "../support/services.js";

// PostgreSQL and a real NATS server with JetStream: the relay delivers the outbox in
// order per key, with Nats-Msg-Id set, from several relays at once.
const t = useTestErrand();
let stream: Awaited<ReturnType<typeof testStream>>;
beforeEach(async () => {
  stream = await testStream();
});
afterEach(() => stream.close());

const backlog = () => outboxBacklog(t);

async function publishNumbered(total: number, keys: number, topic = "orders.changed"): Promise<void> {
  for (let start = 0; start < total; start += 2_000) {
    const batch = Array.from({ length: Math.min(2_000, total - start) }, (_, i) => {
      const n = start + i;
      return { topic, key: `k${n % keys}`, message: { key: `k${n % keys}`, seq: Math.floor(n / keys) } };
    });
    await t.errand.publishMany(batch);
  }
}

it("relays 10,000 messages with two relays at once: every one delivered once, in order per key, and deleted from the outbox", async () => {
  await publishNumbered(10_000, 40);
  const started = performance.now();
  const relays = [0, 1].map(() => t.errand.relay({ to: natsUrl, stream: stream.name, subjectPrefix: stream.subjectPrefix, pollIntervalMs: 50 }));
  await Promise.all(relays.map((relay) => relay.start()));
  await eventually(async () => (await backlog()) === 0, 120_000, "an empty outbox");
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(relays.map((relay) => relay.stop()));
  console.log(`relay to JetStream: 10,000 messages in ${seconds.toFixed(2)} s (${Math.round(10_000 / seconds)}/s, two relays)`);
  const received = await stream.read();
  expect(received).toHaveLength(10_000);
  expect(new Set(received.map((r) => r.id)).size).toBe(10_000);
  expect([...checkOrderPerKey(received).values()]).toEqual(Array.from({ length: 40 }, () => 250));
  expect(received[0]).toMatchObject({ topic: "orders.changed", key: (received[0]!.body as { key: string }).key });
});

it("a message is published with its headers; a relay started later sends what was committed before, and deletes it", async () => {
  await t.inTransaction((db) => t.errand.publish("orders.created", { orderId: 7 }, { db, key: "order:7", headers: { "trace-id": "abc" } }));
  expect((await t.errand.stats()).outbox?.messages).toBe(1);
  const relay = t.errand.relay({ to: natsUrl, stream: stream.name, subjectPrefix: stream.subjectPrefix });
  const result = await relay.runOnce();
  await relay.stop();
  expect(result).toEqual({ sent: 1, kept: 0, busy: false });
  expect(await stream.read()).toEqual([{ id: expect.stringMatching(/^\d+$/) as unknown, key: "order:7", body: { orderId: 7 }, topic: "orders.created" }]);
  expect(await backlog()).toBe(0);
  // Sent rows are deleted, not marked: nothing is left for the purger, and the backlog gauges read empty.
  expect(await t.sql(`SELECT * FROM ${t.schema}.outbox`)).toEqual([]);
  expect((await t.errand.stats()).outbox).toEqual({ messages: 0, oldestAgeMs: null });
});

it("JetStream drops a message sent again with the same id (a crash between publish and delete)", async () => {
  await t.errand.publishMany([
    { topic: "a.b", message: { key: "k", seq: 0 }, key: "k" },
    { topic: "a.b", message: { key: "k", seq: 1 }, key: "k" },
  ]);
  const saved = await t.sql(`SELECT * FROM ${t.schema}.outbox ORDER BY id`);
  const relay = t.errand.relay({ to: natsUrl, stream: stream.name, subjectPrefix: stream.subjectPrefix });
  await relay.runOnce();
  // As if the relay had died before its delete committed: the rows are back.
  await t.sql(`INSERT INTO ${t.schema}.outbox (id, topic, key, message, headers, created_at) SELECT id, topic, key, message, headers, created_at FROM jsonb_populate_recordset(NULL::${t.schema}.outbox, $1::jsonb)`, [JSON.stringify(saved)]);
  expect(await relay.runOnce()).toEqual({ sent: 2, kept: 0, busy: false });
  await relay.stop();
  expect(await stream.count()).toBe(2);
  checkOrderPerKey(await stream.read());
});

it("a message no stream captures stays in the outbox with every later one of its key; other keys go on", async () => {
  await stream.close();
  stream = await testStream(["ok"]);
  await t.errand.publishMany([
    { topic: "ok", message: { key: "a", seq: 0 }, key: "a" },
    { topic: "nowhere", message: { key: "b", seq: 0 }, key: "b" },
    { topic: "ok", message: { key: "b", seq: 1 }, key: "b" },
    { topic: "ok", message: { key: "a", seq: 1 }, key: "a" },
  ]);
  const relay = t.errand.relay({ to: natsUrl, subjectPrefix: stream.subjectPrefix });
  await expect(relay.runOnce()).rejects.toThrow(/^2 of 4 message\(s\) kept in the outbox: /);
  await relay.stop();
  expect((await stream.read()).map((r) => r.body)).toEqual([
    { key: "a", seq: 0 },
    { key: "a", seq: 1 },
  ]);
  expect(await t.sql(`SELECT topic, key FROM ${t.schema}.outbox ORDER BY id`)).toEqual([
    { topic: "nowhere", key: "b" },
    { topic: "ok", key: "b" },
  ]);
});

it("an unreachable broker, a missing stream, a URL of no broker and a mapping with wildcards are clear errors at start", async () => {
  const unreachable = t.errand.relay({ to: "nats://127.0.0.1:1" });
  const error = await unreachable.start().catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ErrandError);
  expect(error).toMatchObject({ code: "broker_unreachable", message: expect.stringMatching(/^cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/) as unknown });
  await expect(t.errand.relay({ to: natsUrl, stream: "NO_SUCH_STREAM_X" }).start()).rejects.toThrow(/JetStream stream 'NO_SUCH_STREAM_X' is not usable .*create it first/);
  expect(() => t.errand.relay({ to: "http://127.0.0.1:4222" })).toThrow(/^to: "http:\/\/127\.0\.0\.1:4222" is not a broker URL/);
  expect(() => t.errand.relay({ to: natsUrl, batchSize: 0 })).toThrow(/^batchSize: /);
  // A mapping that would make subjects no stream can hold (wildcards, spaces) is refused before connecting.
  expect(() => t.errand.relay({ to: natsUrl, subjectPrefix: "events.*." })).toThrow(expect.objectContaining({ name: "ValidationError", field: "subjectPrefix", message: "subjectPrefix: must be a string without spaces or wildcards" }) as Error);
  expect(() => t.errand.relay({ to: "amqp://guest:guest@127.0.0.1:5672", exchange: "my exchange" })).toThrow(/^exchange: must be a string without spaces or wildcards$/);
});

it("a message over the broker's size limit (maxPayloadBytes raised past NATS's max_payload) stays in the outbox with the later ones of its key, with a clear error; other keys go on", async () => {
  const big = await testErrand({ maxPayloadBytes: 4 * 1024 * 1024 });
  try {
    await big.errand.publishMany([
      { topic: "x", key: "a", message: { key: "a", seq: 0, pad: "x".repeat(2 * 1024 * 1024) } },
      { topic: "x", key: "b", message: { key: "b", seq: 0 } },
      { topic: "x", key: "a", message: { key: "a", seq: 1 } },
      { topic: "x", key: "b", message: { key: "b", seq: 1 } },
    ]);
    const relay = big.errand.relay({ to: natsUrl, stream: stream.name, subjectPrefix: stream.subjectPrefix });
    await expect(relay.runOnce()).rejects.toThrow(/^2 of 4 message\(s\) kept in the outbox: .*(max_payload|MAX_PAYLOAD|payload)/i);
    await relay.stop();
    expect((await stream.read()).map((r) => r.body)).toEqual([
      { key: "b", seq: 0 },
      { key: "b", seq: 1 },
    ]);
    expect(await big.sql(`SELECT key, message->'seq' AS seq FROM ${big.schema}.outbox ORDER BY id`)).toEqual([
      { key: "a", seq: 0 },
      { key: "a", seq: 1 },
    ]);
  } finally {
    await big.cleanup();
  }
});
