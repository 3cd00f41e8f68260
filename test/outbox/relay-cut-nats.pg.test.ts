import { afterEach, beforeEach, expect, it } from "vitest";
import type { RelayEvent } from "../../src/index.js";
import { checkOrderPerKey, outboxBacklog, testStream } from "../support/brokers.js";
import { eventually, useTestErrand } from "../support/db.js";
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

const backlog = () => outboxBacklog(t);
const held = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms)); // how long the network stays cut: the scenario, not a wait for an event

it("a network cut mid-relay: the relay retries with backoff, then every message reaches the stream once, in order per key", async () => {
  const total = 6_000;
  const keys = 50;
  await t.errand.publishMany(Array.from({ length: total }, (_, n) => ({ topic: "x", key: `k${n % keys}`, message: { key: `k${n % keys}`, seq: Math.floor(n / keys) } })));
  const events: RelayEvent[] = [];
  const relay = t.errand.relay({
    to: `nats://127.0.0.1:${proxy.port}`,
    stream: stream.name,
    subjectPrefix: stream.subjectPrefix,
    batchSize: 100,
    pollIntervalMs: 50,
    publishTimeoutMs: 1_000,
    retry: { baseDelayMs: 100, maxDelayMs: 1_000 },
    onEvent: (e) => events.push(e),
  });
  await relay.start();
  await eventually(() => events.some((e) => e.type === "sent"), 30_000, "a first batch");
  proxy.cut();
  const cutAt = events.length;
  await eventually(() => events.slice(cutAt).filter((e) => e.type === "error").length >= 2, 30_000, "the relay failing twice while cut");
  await held(2_000);
  const duringCut = events.slice(cutAt).filter((e) => e.type === "error");
  const leftAtCut = await backlog();
  proxy.restore();
  // Published after the cut: these can only go through a connection made after it.
  const after = 200;
  await t.errand.publishMany(Array.from({ length: after }, (_, n) => ({ topic: "x", key: "late", message: { key: "late", seq: n } })));
  await eventually(async () => (await backlog()) === 0, 60_000, "an empty outbox");
  await relay.stop();
  console.log(`network cut (JetStream): ${leftAtCut} of ${total} messages waiting when restored, ${duringCut.length} failed batches while cut, retries in ${duringCut.map((e) => (e.type === "error" ? e.retryInMs : 0)).join(", ")} ms`);
  expect(leftAtCut).toBeGreaterThan(0);
  // Backoff: the retry ceiling doubles from 100 ms (with jitter, each delay is 50–100 % of its ceiling).
  const delays = duringCut.map((e) => (e.type === "error" ? e.retryInMs : 0));
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
