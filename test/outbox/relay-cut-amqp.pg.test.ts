import { afterEach, beforeEach, expect, it } from "vitest";
import type { RelayEvent } from "../../src/index.js";
import { type Received, outboxBacklog, testQueue } from "../support/brokers.js";
import { eventually, useTestErrand } from "../support/db.js";
import { amqpUrl } from "../support/services.js";
import { type TcpProxy, startTcpProxy } from "../support/tcp-proxy.js";

// PostgreSQL and a real RabbitMQ reached through a TCP proxy the test controls: the
// network is cut mid-relay (every connection dropped, new ones refused) and restored.
const t = useTestErrand();
let queue: Awaited<ReturnType<typeof testQueue>>;
let proxy: TcpProxy;
beforeEach(async () => {
  queue = await testQueue();
  const target = new URL(amqpUrl);
  proxy = await startTcpProxy(target.hostname, Number(target.port || 5672));
});
afterEach(async () => {
  await proxy.close();
  await queue.close();
});

const backlog = () => outboxBacklog(t);
const held = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms)); // how long the network stays cut: the scenario, not a wait for an event

/**
 * At least once, in order: per key, the first copies of the messages come in seq order
 * from 0 with none missing; a copy sent again (its confirm lost in the cut) may follow.
 * Returns the messages per key and the number of extra copies.
 */
function checkOrderAtLeastOnce(received: readonly Received[]): { perKey: Map<string, number>; duplicates: number } {
  const next = new Map<string, number>();
  let duplicates = 0;
  for (const r of received) {
    const { key, seq } = r.body as { key: string; seq: number };
    const expected = next.get(key) ?? 0;
    if (seq < expected) duplicates++;
    else if (seq === expected) next.set(key, expected + 1);
    else throw new Error(`key ${key}: got seq ${seq} where ${expected} was due (message ${r.id})`);
  }
  return { perKey: next, duplicates };
}

it("a network cut mid-relay: the relay retries with backoff and reconnects; every message is queued, in order per key", async () => {
  const total = 3_000;
  const keys = 50;
  const topic = `${queue.topicPrefix}x`;
  await t.errand.publishMany(Array.from({ length: total }, (_, n) => ({ topic, key: `k${n % keys}`, message: { key: `k${n % keys}`, seq: Math.floor(n / keys) } })));
  const events: RelayEvent[] = [];
  const to = amqpUrl.replace(/:\d+(\/|$)/, `:${proxy.port}$1`);
  const relay = t.errand.relay({ to, batchSize: 100, pollIntervalMs: 50, publishTimeoutMs: 2_000, retry: { baseDelayMs: 100, maxDelayMs: 1_000 }, onEvent: (e) => events.push(e) });
  await relay.start();
  await eventually(() => events.some((e) => e.type === "sent"), 30_000, "a first batch");
  proxy.cut();
  const cutAt = events.length;
  await eventually(() => events.slice(cutAt).filter((e) => e.type === "error").length >= 2, 30_000, "the relay failing twice while cut");
  await held(2_000);
  const duringCut = events.slice(cutAt).filter((e) => e.type === "error");
  const leftAtCut = await backlog();
  proxy.restore();
  const after = 200;
  await t.errand.publishMany(Array.from({ length: after }, (_, n) => ({ topic, key: "late", message: { key: "late", seq: n } })));
  await eventually(async () => (await backlog()) === 0, 60_000, "an empty outbox");
  await relay.stop();
  const received = await queue.read();
  const { perKey, duplicates } = checkOrderAtLeastOnce(received);
  const delays = duringCut.map((e) => (e.type === "error" ? e.retryInMs : 0));
  console.log(`network cut (RabbitMQ): ${leftAtCut} of ${total} messages waiting when restored, ${duringCut.length} failed attempts while cut, retries in ${delays.join(", ")} ms; ${received.length} queued for ${total + after} messages: ${duplicates} duplicate(s)`);
  expect(leftAtCut).toBeGreaterThan(0);
  expect(delays[0]).toBeLessThanOrEqual(100);
  expect(Math.max(...delays)).toBeGreaterThan(100);
  expect(events.filter((e) => e.type === "connected").length).toBeGreaterThanOrEqual(2);
  expect(perKey.get("late")).toBe(after);
  expect([...perKey.entries()].filter(([key]) => key !== "late").map(([, n]) => n)).toEqual(Array.from({ length: keys }, () => total / keys));
  // At least once: the only extra copies are of messages whose confirm the cut lost, at most one batch.
  expect(received.length - duplicates).toBe(total + after);
  expect(duplicates).toBeLessThanOrEqual(100);
});
