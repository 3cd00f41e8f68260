import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import { JetStreamQueue } from "../../src/index.js";
import { leaseMarginMs } from "../../src/jetstream/worker.js";
import { testJobStream } from "../support/brokers.js";
import { type TestErrand, eventually, testErrand } from "../support/db.js";
import { startNatsCluster } from "../support/nats-cluster.js";
import { type Spawned, databaseUrl, fixture, killAll, spawnNode, urlNamed } from "../support/process.js";

// A 3-node JetStream cluster of our own (nats-server processes, a replicas-3 work-queue
// stream), a large run on the JetStream transport with 4 worker processes SIGKILLed again
// and again and the stream's leader node SIGKILLed mid-run: nothing lost, every job done
// or dead, and no job started twice while its ack wait held (from the starts each handler
// recorded in PostgreSQL with the machine's clock).
// 5,000 by default, to keep CI short (about 30 s here, on a loaded machine);
// ERRAND_CLUSTER_JOBS=50000 runs the full count.
const total = Number(process.env.ERRAND_CLUSTER_JOBS ?? 5_000);
const ackWaitMs = 2_000;
let cluster: Awaited<ReturnType<typeof startNatsCluster>>;
let t: TestErrand;
let stream: Awaited<ReturnType<typeof testJobStream>>;
const running = new Set<Spawned>();

beforeAll(async () => {
  cluster = await startNatsCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});
beforeEach(async () => {
  t = await testErrand();
  await t.sql(`CREATE TABLE ${t.schema}.js_runs (id text NOT NULL, attempt int NOT NULL, worker text NOT NULL, started_ms bigint NOT NULL, ended_ms bigint)`);
  // The cluster elects its JetStream meta leader a few seconds after it starts.
  const created = await eventually(() => testJobStream({ num_replicas: 3 }, cluster.servers).catch(() => undefined), 30_000, "a replicas-3 stream on the new cluster");
  stream = created!;
});
afterEach(async () => {
  await killAll(running);
  await stream?.close().catch(() => {});
  await t.cleanup();
});

let spawned = 0;
function startWorker(): Spawned {
  const name = `jsw${spawned++}`;
  const worker = spawnNode(name, [fixture("jetstream-worker.js")], {
    DATABASE_URL: urlNamed(`errand-${name}-${t.schema}`, databaseUrl),
    SCHEMA: t.schema,
    SERVERS: cluster.servers,
    STREAM: stream.name,
    SUBJECT_PREFIX: stream.subjectPrefix,
    WORKER_NAME: name,
    ACK_WAIT_MS: String(ackWaitMs),
  });
  running.add(worker);
  return worker;
}

const count = async (sql: string) => Number((await t.sql<{ n: string }>(sql))[0]!.n);

it(`${total.toLocaleString("en")} jobs on a 3-node cluster with 4 worker processes SIGKILLed 6 times and the stream leader SIGKILLed mid-run: every job done, none started twice while its ack wait held`, async () => {
  const queue = new JetStreamQueue(t.errand, { queue: "bulk", servers: cluster.servers, stream: stream.name, subjectPrefix: stream.subjectPrefix, ackWaitMs });
  const ids: string[] = [];
  for (let start = 0; start < total; start += 5_000) {
    const batch = Array.from({ length: Math.min(5_000, total - start) }, (_, i) => ({ kind: "job", payload: { n: start + i } }));
    ids.push(...(await queue.enqueueMany(batch)).map((r) => r.id));
  }
  const began = performance.now();
  const leader = (await stream.jsm.streams.info(stream.name)).cluster?.leader;
  const relayNode = cluster.nodes.find((n) => n.name !== leader)!;
  const relay = t.errand.relay({ to: `nats://127.0.0.1:${relayNode.port}`, stream: stream.name, subjectPrefix: stream.subjectPrefix, pollIntervalMs: 50, batchSize: 1_000 });
  await relay.start();
  const workers = [0, 1, 2, 3].map(() => startWorker());
  await Promise.all(workers.map((w) => w.waitForLog((r) => r.event === "ready", 30_000, "ready")));
  const runs = () => count(`SELECT count(DISTINCT id) AS n FROM ${t.schema}.js_runs`);
  let leaderKilled = false;
  // On a stall: what the database, the outbox, the stream and the workers say, then the error.
  const explain = async (error: unknown): Promise<never> => {
    const info = await stream.jsm.consumers.info(stream.name, queue.settings.consumer).catch((e: Error) => e.message);
    const outboxRows = await count(`SELECT count(*) AS n FROM ${t.schema}.outbox`);
    console.log("stalled:", { started: await runs(), outboxRows, inStream: await stream.count().catch(() => -1) }, JSON.stringify(info).slice(0, 1500), workers.map((w) => JSON.stringify(w.logs.slice(-3)) + w.stderr().slice(-300)));
    throw error;
  };
  for (let kill = 0; kill < 6; kill++) {
    const target = Math.round((total * (kill + 1)) / 8);
    await eventually(async () => (await runs()) >= target, 240_000, `${target} jobs started`).catch(explain);
    if (!leaderKilled && kill >= 2) {
      await cluster.kill(leader ?? "n1");
      leaderKilled = true;
    }
    const victim = kill % workers.length;
    await workers[victim]!.kill("SIGKILL");
    running.delete(workers[victim]!);
    workers[victim] = startWorker();
  }
  await eventually(async () => (await runs()) === total, Math.max(60_000, total * 3), "every job started").catch(explain);
  // Done: acknowledged, so the work-queue stream is empty (and nothing is left in the outbox).
  await eventually(async () => (await stream.count().catch(() => -1)) === 0, 120_000, "an empty work queue");
  const seconds = (performance.now() - began) / 1000;
  await relay.stop();
  expect(await count(`SELECT count(*) AS n FROM ${t.schema}.outbox`)).toBe(0);
  expect(await count(`SELECT count(*) AS n FROM ${t.schema}.all_jobs WHERE status = 'dead'`)).toBe(0);
  const started = new Set((await t.sql<{ id: string }>(`SELECT DISTINCT id FROM ${t.schema}.js_runs`)).map((r) => r.id));
  expect(ids.filter((id) => !started.has(id))).toEqual([]);
  expect(started.size).toBe(total);
  // A job started again only once its earlier run's lease had run out as that run's worker
  // kept it, and never while that run was still going. JetStream's ack wait runs from the
  // delivery, a little before the handler starts (the time a loaded machine takes to hand
  // the message over; 70 ms seen in CI), and the worker gives its lease up that much early
  // (leaseMarginMs before it ends): a start gap shorter than the ack wait by less than that
  // margin is a redelivery after a lease that ended.
  const leaseHeld = ackWaitMs - leaseMarginMs(ackWaitMs);
  const early = await t.sql<{ id: string; gap: string; worker: string; prev_worker: string }>(`
    SELECT id, started_ms - prev_start AS gap, prev_end, started_ms, worker, prev_worker, attempt FROM (
      SELECT id, started_ms, worker, attempt, lag(worker) OVER w AS prev_worker, lag(started_ms) OVER w AS prev_start, lag(ended_ms) OVER w AS prev_end
      FROM ${t.schema}.js_runs WINDOW w AS (PARTITION BY id ORDER BY started_ms)) r
    WHERE prev_start IS NOT NULL AND (started_ms - prev_start < ${leaseHeld} OR started_ms < prev_end)`);
  expect(early).toEqual([]);
  const again = await count(`SELECT count(*) - count(DISTINCT id) AS n FROM ${t.schema}.js_runs`);
  const long = await count(`SELECT count(*) AS n FROM ${t.schema}.js_runs WHERE ended_ms IS NOT NULL`);
  expect(long).toBeGreaterThanOrEqual(total / 1000);
  console.log(`JetStream cluster: ${total} jobs in ${seconds.toFixed(1)} s (${Math.round(total / seconds)}/s) with 6 worker kills and the leader node (${leader}) killed; ${again} runs were redeliveries after an ack wait`);
}, 600_000);
