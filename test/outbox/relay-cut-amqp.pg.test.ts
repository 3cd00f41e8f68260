import { afterEach, beforeEach, expect, it } from "vitest";
import { type Received, relayThroughCut, testQueue } from "../support/brokers.js";
import { useTestErrand } from "../support/db.js";
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
  const after = 200;
  const to = amqpUrl.replace(/:\d+(\/|$)/, `:${proxy.port}$1`);
  const { events, delays, leftAtCut } = await relayThroughCut(t, proxy, {
    total, keys, after, topic: `${queue.topicPrefix}x`,
    open: (onEvent) => t.errand.relay({ to, batchSize: 100, pollIntervalMs: 50, publishTimeoutMs: 2_000, retry: { baseDelayMs: 100, maxDelayMs: 1_000 }, onEvent }),
  });
  const received = await queue.read();
  const { perKey, duplicates } = checkOrderAtLeastOnce(received);
  console.log(`network cut (RabbitMQ): ${leftAtCut} of ${total} messages waiting when restored, ${delays.length} failed attempts while cut, retries in ${delays.join(", ")} ms; ${received.length} queued for ${total + after} messages: ${duplicates} duplicate(s)`);
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
