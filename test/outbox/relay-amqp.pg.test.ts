import { afterEach, beforeEach, expect, it } from "vitest";
import { ErrandError } from "../../src/index.js";
import { checkOrderPerKey, outboxBacklog, testQueue } from "../support/brokers.js";
import { eventually, useTestErrand } from "../support/db.js";
import { amqpUrl } from "../support/services.js";

// PostgreSQL and a real RabbitMQ: the relay publishes persistent messages to amq.topic
// with publisher confirms, in order per key, and keeps what no queue would receive.
const t = useTestErrand();
let queue: Awaited<ReturnType<typeof testQueue>>;
beforeEach(async () => {
  queue = await testQueue();
});
afterEach(() => queue.close());

const backlog = () => outboxBacklog(t);

it("relays 10,000 messages with two relays at once: every one confirmed and queued once, in order per key", async () => {
  for (let start = 0; start < 10_000; start += 2_000) {
    await t.errand.publishMany(
      Array.from({ length: 2_000 }, (_, i) => {
        const n = start + i;
        return { topic: `${queue.topicPrefix}orders.changed`, key: `k${n % 40}`, message: { key: `k${n % 40}`, seq: Math.floor(n / 40) } };
      }),
    );
  }
  const started = performance.now();
  const relays = [0, 1].map(() => t.errand.relay({ to: amqpUrl, pollIntervalMs: 50 }));
  await Promise.all(relays.map((relay) => relay.start()));
  await eventually(async () => (await backlog()) === 0, 120_000, "an empty outbox");
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(relays.map((relay) => relay.stop()));
  console.log(`relay to RabbitMQ: 10,000 messages in ${seconds.toFixed(2)} s (${Math.round(10_000 / seconds)}/s, two relays)`);
  const received = await queue.read();
  expect(received).toHaveLength(10_000);
  expect(new Set(received.map((r) => r.id)).size).toBe(10_000);
  expect([...checkOrderPerKey(received).values()]).toEqual(Array.from({ length: 40 }, () => 250));
  expect(received[0]).toMatchObject({ topic: "orders.changed", key: (received[0]!.body as { key: string }).key });
});

it("a message no queue is bound for comes back and stays in the outbox, with the later ones of its key", async () => {
  await t.errand.publishMany([
    { topic: `${queue.topicPrefix}a`, message: { key: "a", seq: 0 }, key: "a", headers: { "trace-id": "abc" } },
    { topic: `unbound-${queue.name}`, message: { key: "b", seq: 0 }, key: "b" },
    { topic: `${queue.topicPrefix}b`, message: { key: "b", seq: 1 }, key: "b" },
  ]);
  const relay = t.errand.relay({ to: amqpUrl });
  await expect(relay.runOnce()).rejects.toThrow(/^2 of 3 message\(s\) kept in the outbox: no queue is bound to exchange 'amq\.topic' for routing key 'unbound-/);
  await relay.stop();
  expect((await queue.read()).map((r) => r.body)).toEqual([{ key: "a", seq: 0 }]);
  expect((await t.sql<{ key: string }>(`SELECT key FROM ${t.schema}.outbox ORDER BY id`)).map((r) => r.key)).toEqual(["b", "b"]);
});

it("an unreachable broker and a missing exchange are clear errors at start", async () => {
  const error = await t.errand.relay({ to: "amqp://guest:secret@127.0.0.1:1" }).start().catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ErrandError);
  expect(error).toMatchObject({ code: "broker_unreachable", message: expect.stringMatching(/^cannot connect to RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:1/) as unknown });
  await expect(t.errand.relay({ to: amqpUrl, exchange: "no-such-exchange-x" }).start()).rejects.toThrow(/has no exchange 'no-such-exchange-x': declare it first/);
});
