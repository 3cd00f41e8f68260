import { afterEach, beforeEach, expect, it } from "vitest";
import { checkOrderPerKey, relayThroughCut, testStream } from "../support/brokers.js";
import { useTestErrand } from "../support/db.js";
import { natsUrl } from "../support/services.js";
import { type TcpProxy, startTcpProxy } from "../support/tcp-proxy.js";

// PostgreSQL and a real NATS server reached through a TCP proxy the test controls: the
// network is cut mid-relay (every connection dropped, new ones refused) and restored.
const t = useTestErrand();
let stream: Awaited<ReturnType<typeof testStream>>;
let proxy: TcpProxy;
beforeEach(async () => {
  stream = await testStream();
  const target = new URL(natsUrl);
  proxy = await startTcpProxy(target.hostname, Number(target.port || 4222));
});
afterEach(async () => {
  await proxy.close();
  await stream.close();
});

it("a network cut mid-relay: the relay retries with backoff, then every message reaches the stream once, in order per key", async () => {
  const total = 6_000;
  const keys = 50;
  const after = 200;
  const { delays, leftAtCut } = await relayThroughCut(t, proxy, {
    total, keys, after, topic: "x",
    open: (onEvent) => t.errand.relay({
      to: `nats://127.0.0.1:${proxy.port}`,
      stream: stream.name,
      subjectPrefix: stream.subjectPrefix,
      batchSize: 100,
      pollIntervalMs: 50,
      publishTimeoutMs: 1_000,
      retry: { baseDelayMs: 100, maxDelayMs: 1_000 },
      onEvent,
    }),
  });
  console.log(`network cut (JetStream): ${leftAtCut} of ${total} messages waiting when restored, ${delays.length} failed batches while cut, retries in ${delays.join(", ")} ms`);
  expect(leftAtCut).toBeGreaterThan(0);
  // Backoff: the retry ceiling doubles from 100 ms (with jitter, each delay is 50–100 % of its ceiling).
  expect(delays[0]).toBeLessThanOrEqual(100);
  expect(Math.max(...delays)).toBeGreaterThan(100);
  expect(proxy.accepted()).toBeGreaterThanOrEqual(2);
  const received = await stream.read();
  expect(new Set(received.map((r) => r.id)).size).toBe(received.length); // no duplicate reached the stream
  expect(received).toHaveLength(total + after);
  const counts = checkOrderPerKey(received);
  expect(counts.get("late")).toBe(after);
  expect([...counts.entries()].filter(([key]) => key !== "late").map(([, n]) => n)).toEqual(Array.from({ length: keys }, () => total / keys));
});
