// Job throughput on the JetStream transport (errand's JetStreamQueue): `count` no-op jobs
// enqueued into the outbox and relayed to a work-queue stream of the NATS server at
// BENCH_NATS_URL (not timed), then run by `workers` worker processes; the rate runs from
// the first worker's ready to the moment the stream holds no message (a work-queue stream
// drops a message when its ack arrives), as processJobs's runs end at the last completion.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dropSchema, pgUrl, sleep, monoMs, withPg } from "./common.js";

export const natsUrl = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";
const workerScript = fileURLToPath(new URL("./jetstream-worker.js", import.meta.url));

/** The queue's settings for schema `ns`: its own stream and subject prefix. */
export function queueFor(ns) {
  return { queue: "bench", servers: natsUrl, stream: ns.toUpperCase().replace(/[^A-Z0-9_-]/g, "_"), subjectPrefix: `${ns}.` };
}

async function streams() {
  const { connect } = await import("@nats-io/transport-node");
  const { jetstreamManager } = await import("@nats-io/jetstream");
  const nc = await connect({ servers: new URL(natsUrl).host });
  return { nc, jsm: await jetstreamManager(nc) };
}

export async function jetstreamJobs(ns, { count, capMs, workers }) {
  const { Errand, JetStreamQueue } = await import("../../dist/index.js");
  const settings = queueFor(ns);
  await dropSchema(ns);
  const errand = await Errand.open({ connectionString: pgUrl, schema: ns });
  const { nc, jsm } = await streams();
  await jsm.streams.delete(settings.stream).catch(() => {});
  await jsm.streams.add({ name: settings.stream, subjects: [`${ns}.>`], retention: "workqueue" });
  const children = [];
  try {
    const queue = new JetStreamQueue(errand, settings);
    for (let i = 0; i < count; i += 1000) await queue.enqueueMany(Array.from({ length: Math.min(1000, count - i) }, (_, j) => ({ kind: "bench", payload: { i: i + j } })));
    const relay = errand.relay({ to: natsUrl, stream: settings.stream, subjectPrefix: settings.subjectPrefix, batchSize: 1000, pollIntervalMs: 50 });
    await relay.start();
    while ((await jsm.streams.info(settings.stream)).state.messages < count) await sleep(50);
    await relay.stop();
    for (let i = 0; i < workers; i++) children.push(fork(workerScript, [ns], { stdio: ["ignore", "inherit", "inherit", "ipc"] }));
    // The cap counts from the moment every worker is up (starting node processes is not the transport's cost).
    let readyAt; // the first worker's ready, as processJobs's runs start
    await Promise.all(children.map((child) => new Promise((resolve) => child.once("message", () => resolve((readyAt ??= monoMs()))))));
    const deadline = performance.now() + capMs;
    let emptyAt; // when a poll (every 2 ms in the last tenth) first found the stream empty
    while (performance.now() < deadline) {
      const sentAt = monoMs();
      const { messages } = (await jsm.streams.info(settings.stream)).state;
      if (messages === 0) {
        emptyAt = sentAt;
        break;
      }
      await sleep(messages > count / 10 ? 20 : 2);
    }
    const results = await Promise.all(children.map((child) => new Promise((resolve) => {
      child.once("message", resolve);
      child.kill("SIGTERM");
    })));
    const handled = results.reduce((s, r) => s + r.count, 0);
    const first = Math.min(...results.map((r) => r.first ?? Infinity));
    const last = Math.max(...results.map((r) => r.last ?? -Infinity));
    if (handled < count) throw new Error(`jetstream: ${handled} of ${count} jobs handled within ${capMs} ms`);
    if (emptyAt === undefined) throw new Error(`jetstream: every job handled, but the stream still held messages (unacknowledged) after ${capMs} ms`);
    const dead = await withPg(async (c) => Number((await c.query(`SELECT count(*) FROM "${ns}".jobs WHERE status = 'dead'`)).rows[0].count));
    if (dead > 0) throw new Error(`jetstream: ${dead} dead jobs`);
    const handlerRate = ((handled - 1) / (last - first)) * 1000; // to the last handler call, as before
    return { value: (handled / (emptyAt - readyAt)) * 1000, fromFirstCallRate: ((handled - 1) / (emptyAt - first)) * 1000, firstCallAfterReadyMs: first - readyAt, handlerRate, completionLagMs: emptyAt - last, handled, workers };
  } finally {
    for (const child of children) child.kill("SIGKILL");
    await jsm.streams.delete(settings.stream).catch(() => {});
    await nc.close();
    await errand.close();
    await dropSchema(ns);
  }
}
