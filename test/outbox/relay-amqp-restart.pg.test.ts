import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { RelayEvent } from "../../src/index.js";
import { type Received, testQueue } from "../support/brokers.js";
import { eventually, useTestErrand } from "../support/db.js";
import { amqpProblem, amqpUrl } from "../support/services.js";

// PostgreSQL and a real RabbitMQ, restarted (rabbitmqctl stop_app / start_app) while the
// relay runs: nothing is lost. Short, as it restarts the machine's shared broker.
const t = useTestErrand();
const run = promisify(execFile);
let queue: Awaited<ReturnType<typeof testQueue>>;
beforeEach(async () => {
  queue = await testQueue();
});
afterEach(async () => {
  await run("rabbitmqctl", ["-q", "start_app"]).catch(() => {}); // never leave it stopped
  await queue?.close();
});

it("RabbitMQ restarted mid-relay: the relay retries and reconnects, every message reaches the durable queue", async () => {
  const total = 3_000;
  await t.errand.publishMany(Array.from({ length: total }, (_, n) => ({ topic: `${queue.topicPrefix}x`, key: `k${n % 30}`, message: { key: `k${n % 30}`, seq: Math.floor(n / 30) } })));
  const events: RelayEvent[] = [];
  const relay = t.errand.relay({ to: amqpUrl, batchSize: 100, pollIntervalMs: 50, retry: { baseDelayMs: 100, maxDelayMs: 1_000 }, onEvent: (e) => events.push(e) });
  await relay.start();
  await eventually(() => events.some((e) => e.type === "sent"), 30_000, "a first batch");
  await run("rabbitmqctl", ["-q", "stop_app"]);
  await eventually(() => events.some((e) => e.type === "error"), 30_000, "the relay noticing");
  await run("rabbitmqctl", ["-q", "start_app"]);
  await eventually(async () => (await amqpProblem(amqpUrl)) === undefined, 60_000, "RabbitMQ back");
  await eventually(async () => Number((await t.sql<{ n: string }>(`SELECT count(*) AS n FROM ${t.schema}.outbox`))[0]!.n) === 0, 60_000, "an empty outbox");
  await relay.stop();
  expect(events.filter((e) => e.type === "connected").length).toBeGreaterThanOrEqual(2);
  // The queue is durable and the messages persistent: those queued before the restart are still there.
  // The test's own connection died with the restart: read through a new one (the old one is left, not closed, as closing deletes the queue).
  queue = await testQueue(queue.name);
  const received: Received[] = await queue.read();
  // At least once: a batch confirmed just before the broker went down may come twice; none is missing.
  const seen = new Set(received.map((r) => `${(r.body as { key: string }).key}:${(r.body as { seq: number }).seq}`));
  expect(seen.size).toBe(total);
});
