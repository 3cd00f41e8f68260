// The outbox relay's throughput (errand only): `count` messages published to the outbox
// (not timed), then one relay started in this process; the rate is the messages over the
// time from start() to an empty outbox, checked against what the broker holds. Each
// measurement gets its own JetStream stream or RabbitMQ queue, removed afterwards.
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { dropSchema, pgUrl, sleep, withPg } from "./common.js";

const natsUrl = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";
const amqpUrl = process.env.BENCH_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";

/** A stream (NATS) or durable queue (RabbitMQ) that receives the relayed messages. */
async function sink(broker) {
  const prefix = `bench${randomBytes(4).toString("hex")}`;
  if (broker === "nats") {
    const { connect } = await import("@nats-io/transport-node");
    const { jetstreamManager } = await import("@nats-io/jetstream");
    const nc = await connect({ servers: new URL(natsUrl).host });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: prefix.toUpperCase(), subjects: [`${prefix}.>`] });
    return {
      options: { to: natsUrl, stream: prefix.toUpperCase(), subjectPrefix: `${prefix}.` },
      topic: "event",
      count: async () => (await jsm.streams.info(prefix.toUpperCase())).state.messages,
      close: async () => {
        await jsm.streams.delete(prefix.toUpperCase()).catch(() => {});
        await nc.close();
      },
    };
  }
  const amqp = (await import("amqplib")).default;
  const connection = await amqp.connect(amqpUrl);
  const channel = await connection.createChannel();
  await channel.assertQueue(prefix, { durable: true });
  await channel.bindQueue(prefix, "amq.topic", `${prefix}.#`);
  return {
    options: { to: amqpUrl },
    topic: `${prefix}.event`,
    count: async () => (await channel.checkQueue(prefix)).messageCount,
    close: async () => {
      await channel.deleteQueue(prefix).catch(() => {});
      await connection.close().catch(() => {});
    },
  };
}

/** Relays `count` messages over `keys` keys (0: no key) to `broker` ("nats" or "amqp"); returns messages/s. */
export async function relayThroughput(ns, { broker, count, keys, batchSize }) {
  const { Errand } = await import(process.env.BENCH_ERRAND_DIST ? pathToFileURL(process.env.BENCH_ERRAND_DIST).href : "../../dist/index.js");
  await dropSchema(ns);
  const errand = await Errand.open({ connectionString: pgUrl, schema: ns });
  const target = await sink(broker);
  try {
    for (let start = 0; start < count; start += 1000) {
      const batch = [];
      for (let i = start; i < Math.min(count, start + 1000); i++) {
        batch.push(keys ? { topic: target.topic, key: `k${i % keys}`, message: { i } } : { topic: target.topic, message: { i } });
      }
      await errand.publishMany(batch);
    }
    const waiting = async () => Number((await withPg((c) => c.query(`SELECT count(*) AS n FROM "${ns}".outbox`))).rows[0].n);
    let batches = 0;
    const relay = errand.relay({ ...target.options, pollIntervalMs: 50, ...(batchSize ? { batchSize } : {}), onEvent: (e) => void (e.type === "sent" && batches++) });
    const started = performance.now();
    await relay.start();
    while ((await waiting()) > 0) await sleep(10);
    const ms = performance.now() - started;
    await relay.stop();
    const delivered = await target.count();
    if (delivered !== count) throw new Error(`relay to ${broker}: ${delivered} messages at the broker for ${count} published`);
    return { value: (count / ms) * 1000, batches };
  } finally {
    await target.close();
    await errand.close();
    await dropSchema(ns).catch(() => {});
  }
}
