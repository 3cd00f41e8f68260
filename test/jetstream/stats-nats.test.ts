import { performance } from "node:perf_hooks";
import { afterEach, beforeEach, expect, it } from "vitest";
import { type Errand, JetStreamQueue } from "../../src/index.js";
import { createDashboard } from "../../src/dashboard/index.js";
import { testJobStream } from "../support/brokers.js";
import { cliDatabase, errandCli } from "../support/cli.js";
import { dashboardSession } from "../support/dashboard.js";
import { useTestErrand } from "../support/db.js";
import { natsUrl } from "../support/services.js";

// JetStream queues in errand.stats(), `errand stats` and the dashboard, on both databases:
// a queue created on an errand is reported by it; NATS not answering shows as unreachable
// within the stats timeout and leaves the PostgreSQL figures intact.
const t = useTestErrand();
let stream: Awaited<ReturnType<typeof testJobStream>>;
beforeEach(async () => {
  stream = await testJobStream();
});
afterEach(async () => {
  await stream.close();
});

/** The queue `media` on `errand`, its consumer created (by a worker started and stopped), with 2 jobs in the outbox. */
async function mediaWithTwoJobs(errand: Errand): Promise<JetStreamQueue> {
  const media = new JetStreamQueue(errand, { queue: "media", servers: natsUrl, stream: stream.name, subjectPrefix: stream.subjectPrefix });
  const worker = media.worker({ handlers: {}, forwardIntervalMs: 0 });
  await worker.start();
  await worker.stop();
  await media.enqueueMany([{ kind: "resize", payload: {} }, { kind: "resize", payload: {} }]);
  return media;
}

it("errand.stats() reports the JetStream queues created on it; an unreachable NATS is an error within the timeout, not a failure", async () => {
  expect(await t.errand.stats()).not.toHaveProperty("jetstream");
  await mediaWithTwoJobs(t.errand);
  await t.errand.enqueue("plain", {});
  expect((await t.errand.stats()).jetstream).toEqual([{ queue: "media", pending: 0, ackPending: 0, redelivered: 0, waiting: expect.any(Number) as unknown, outbox: 2 }]);

  new JetStreamQueue(t.errand, { queue: "gone", servers: "nats://127.0.0.1:1", stream: stream.name });
  const began = performance.now();
  const stats = await t.errand.stats();
  expect(performance.now() - began).toBeLessThan(10_000); // the 2 s timeout, far from the worker's 20 s
  expect(stats.kinds.plain?.ready).toBe(1);
  expect(stats.jetstream).toEqual([
    expect.objectContaining({ queue: "media", outbox: 2 }),
    { queue: "gone", error: expect.stringMatching(/^cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/) as unknown },
  ]);
});

it("a queue whose consumer no worker has created yet says so", async () => {
  new JetStreamQueue(t.errand, { queue: "fresh", servers: natsUrl, stream: stream.name, subjectPrefix: stream.subjectPrefix });
  expect((await t.errand.stats()).jetstream).toEqual([{ queue: "fresh", error: "JetStream queue 'fresh' has no consumer 'errand_fresh' yet: the first worker creates it" }]);
});

it("the dashboard's overview shows the JetStream queues, and an unreachable one as such", async () => {
  await mediaWithTwoJobs(t.errand);
  new JetStreamQueue(t.errand, { queue: "gone", servers: "nats://127.0.0.1:1", stream: stream.name });
  const page = await dashboardSession(createDashboard(t.errand)).get("/");
  expect(page.status).toBe(200);
  expect(page.text).toMatch(/<tr data-jetstream="media"><th scope="row">media<\/th>\s*<td class="num">2<\/td><td class="num">0<\/td><td class="num">0<\/td><td class="num">0<\/td><\/tr>/);
  expect(page.text).toMatch(/<tr data-jetstream="gone">.*<strong>unreachable:<\/strong> cannot connect to NATS/);
});

it("errand stats --jetstream shows the queue's figures (table and JSON), and an unreachable server without failing", async () => {
  const db = cliDatabase();
  try {
    const errand = await db.open();
    await mediaWithTwoJobs(errand).finally(() => errand.close());
    const flags = ["--jetstream", "media", "--stream", stream.name, "--subject-prefix", stream.subjectPrefix];
    const json = await errandCli(["stats", ...db.flags, "--json", "--nats", natsUrl, ...flags]);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { jetstream: unknown }).jetstream).toEqual([{ queue: "media", pending: 0, ackPending: 0, redelivered: 0, waiting: expect.any(Number) as unknown, outbox: 2 }]);
    const table = await errandCli(["stats", ...db.flags, "--nats", natsUrl, ...flags], { COLUMNS: "120" });
    expect(table.stdout).toMatch(/JetStream queue +outbox +pending +ack pending +redelivered +state\nmedia +2 +0 +0 +0 +ok\n/);
    const down = await errandCli(["stats", ...db.flags, "--nats", "nats://127.0.0.1:1", ...flags], { COLUMNS: "120" });
    expect(down.code).toBe(0);
    expect(down.stdout).toMatch(/media +- +- +- +- +unreachable: cannot connect to NATS/);
    expect(await errandCli(["stats", ...db.flags, "--jetstream", "media"])).toMatchObject({ code: 2, stderr: expect.stringContaining("--jetstream needs --nats") as unknown });
  } finally {
    await db.cleanup();
  }
});
