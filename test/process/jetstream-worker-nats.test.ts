import { performance } from "node:perf_hooks";
import { afterEach, beforeEach, expect, it } from "vitest";
import { JetStreamQueue, type Relay } from "../../src/index.js";
import { testJobStream } from "../support/brokers.js";
import { errandCli } from "../support/cli.js";
import { databaseUrl, fixture } from "../support/process.js";
import { natsUrl } from "../support/services.js";
import { type ProcessTest, processTest } from "./harness.js";

// `errand worker --jetstream`: the CLI runs a JetStream queue's jobs with the handler
// module it already loads, logs like the PostgreSQL worker, and shuts down gracefully.
let t: ProcessTest;
let stream: Awaited<ReturnType<typeof testJobStream>>;
let relay: Relay;
beforeEach(async () => {
  t = await processTest();
  stream = await testJobStream();
  relay = t.errand.relay({ to: natsUrl, stream: stream.name, subjectPrefix: stream.subjectPrefix, pollIntervalMs: 50 });
  await relay.start();
});
afterEach(async () => {
  await relay.stop();
  await t.cleanup();
  await stream.close();
});

const queue = () => new JetStreamQueue(t.errand, { queue: "media", servers: natsUrl, stream: stream.name, subjectPrefix: stream.subjectPrefix });
const jetstreamFlags = () => ["--jetstream", "media", "--nats", natsUrl, "--stream", stream.name, "--subject-prefix", stream.subjectPrefix];

it("runs the queue's jobs with the handler module, then on SIGTERM finishes the running job, returns the one past the deadline and exits 0", async () => {
  const media = queue();
  const quick = await media.enqueueMany([1, 2, 3].map(() => ({ kind: "record", payload: { ms: 0 } })));
  const worker = t.worker("w", [...jetstreamFlags(), "--concurrency", "4", "--shutdown-timeout", "1", "--verbose", "--metrics-port", "0"]);
  await worker.waitForLog((l) => l.event === "started", 30_000, "the JetStream worker to start");
  const { port } = await worker.waitForLog((l) => l.event === "metrics_listening", 1_000, "the metrics server");
  const metrics = await (await fetch(`http://127.0.0.1:${String(port)}/metrics`)).text();
  expect(metrics).toContain('errand_jetstream_up{queue="media"} 1');
  expect(metrics).toMatch(/errand_jetstream_jobs\{queue="media",state="pending"\} \d+/);
  expect(worker.logs.find((l) => l.event === "started")).toMatchObject({ transport: "jetstream", queue: "media", stream: stream.name, consumer: "errand_media" });
  for (const { id } of quick) expect(await t.started(id, worker)).toMatchObject([{ attempt: 1, worker: "w" }]);
  await worker.waitForLog((l) => l.event === "job_done" && l.job === quick[2]!.id, 10_000, "the third job done");

  const [long, stuck] = await media.enqueueMany([
    { kind: "record", payload: { ms: 800 } },
    { kind: "stubborn", payload: {} },
  ]);
  await t.started(long!.id, worker);
  await t.started(stuck!.id, worker);
  const sent = performance.now();
  worker.child.kill("SIGTERM");
  expect(await worker.exited).toEqual({ code: 0, signal: null });
  // It gave the handlers the 1 s deadline, and did not wait for the last-resort exit (deadline + 10 s, exit 1).
  expect(performance.now() - sent).toBeGreaterThanOrEqual(950);
  expect((await t.effects(long!.id))[0]!.ended_at).not.toBeNull();
  expect(worker.logs.filter((l) => l.event === "job_returned").map((l) => l.job)).toEqual([stuck!.id]);
  expect(worker.logs.at(-1)).toMatchObject({ event: "stopped", transport: "jetstream", queue: "media" });
  // The finished jobs were acknowledged; the returned one went back at once, not after the 30 s ack wait.
  expect(await stream.count()).toBe(1);
  const next = t.worker("w2", jetstreamFlags());
  const runs = await t.started(stuck!.id, next, 2, 15_000);
  expect(runs.map((r) => [r.worker, r.attempt])).toEqual([["w", 1], ["w2", 2]]);
  expect(await t.statusCounts()).toEqual({});
});

it("refuses bad --jetstream flags before connecting, and an unusable stream at start, with exit codes 2 and 1", async () => {
  const db = ["worker", "--database-url", databaseUrl, "--schema", t.schema, "--handlers", fixture("handlers.js")];
  const run = (args: string[]) => errandCli([...db, ...args], { EFFECTS_SCHEMA: t.schema, WORKER_NAME: "bad" });
  expect(await run(["--jetstream", "media"])).toMatchObject({ code: 2, stderr: "errand: --jetstream needs --nats nats://host:4222 and --stream NAME (the work-queue stream)\n" });
  expect(await run(["--stream", "JOBS"])).toMatchObject({ code: 2, stderr: "errand: --stream applies to JetStream queues: add --jetstream QUEUE\n" });
  expect((await run([...jetstreamFlags(), "--queue", "email=2"])).stderr).toMatch(/^errand: --queue applies to PostgreSQL queues; with --jetstream this process runs only the JetStream queues/);
  expect((await run(["--jetstream", "media", "--nats", "amqp://127.0.0.1", "--stream", "JOBS"])).stderr).toMatch(/^errand: --nats: must be a NATS URL/);
  expect((await run(["--jetstream", "no spaces", "--nats", natsUrl, "--stream", "JOBS"])).stderr).toMatch(/^errand: --jetstream: must be a queue name/);
  const missing = await run(["--jetstream", "media", "--nats", natsUrl, "--stream", "NO_SUCH_STREAM"]);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toMatch(/^errand: JetStream stream 'NO_SUCH_STREAM' is not usable .*create it first/);
});
