import { randomBytes } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import amqp from "amqplib";
import type { RelayEvent } from "../../src/index.js";
import { type TestErrand, eventually } from "./db.js";
import { amqpUrl, natsUrl } from "./services.js";
import type { TcpProxy } from "./tcp-proxy.js";

// The outbox tests' brokers: each test gets its own JetStream stream (and subject prefix)
// or RabbitMQ queue (and routing-key prefix), removed afterwards.

/** Messages still in the test schema's outbox (not yet relayed). */
export async function outboxBacklog(t: Pick<TestErrand, "sql" | "schema">): Promise<number> {
  return Number((await t.sql<{ n: string }>(`SELECT count(*) AS n FROM ${t.schema}.outbox`))[0]!.n);
}

/**
 * The relay tests' network cut: `total` messages over `keys` keys (`{ key, seq }`, seq
 * counting per key) are published; the relay `open` makes starts and sends a first batch;
 * the proxy then cuts the network until the relay has failed twice, and 2 s more; once it
 * is restored, `after` messages of key "late" are published, which can only go through a
 * connection made after the cut. Resolves when the outbox is empty and the relay stopped,
 * with the relay's events, its retry delays while cut and the backlog at the restore.
 */
export async function relayThroughCut(
  t: TestErrand,
  proxy: TcpProxy,
  options: { total: number; keys: number; after: number; topic: string; open: (onEvent: (e: RelayEvent) => void) => { start(): Promise<void>; stop(): Promise<void> } },
): Promise<{ events: RelayEvent[]; delays: number[]; leftAtCut: number }> {
  const { total, keys, after, topic } = options;
  await t.errand.publishMany(Array.from({ length: total }, (_, n) => ({ topic, key: `k${n % keys}`, message: { key: `k${n % keys}`, seq: Math.floor(n / keys) } })));
  const events: RelayEvent[] = [];
  const relay = options.open((e) => events.push(e));
  await relay.start();
  await eventually(() => events.some((e) => e.type === "sent"), 30_000, "a first batch");
  proxy.cut();
  const cutAt = events.length;
  await eventually(() => events.slice(cutAt).filter((e) => e.type === "error").length >= 2, 30_000, "the relay failing twice while cut");
  await new Promise((resolve) => setTimeout(resolve, 2_000)); // how long the network stays cut: the scenario, not a wait for an event
  const delays = events.slice(cutAt).flatMap((e) => (e.type === "error" ? [e.retryInMs] : []));
  const leftAtCut = await outboxBacklog(t);
  proxy.restore();
  await t.errand.publishMany(Array.from({ length: after }, (_, n) => ({ topic, key: "late", message: { key: "late", seq: n } })));
  await eventually(async () => (await outboxBacklog(t)) === 0, 60_000, "an empty outbox");
  await relay.stop();
  return { events, delays, leftAtCut };
}

/** A name no other test uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}${randomBytes(5).toString("hex")}`;
}

/** What a consumer read: per message its id, key and body. */
export interface Received {
  readonly id: string;
  readonly key: string | undefined;
  readonly body: unknown;
  readonly topic: string;
}

/** A JetStream stream capturing `<prefix>.>` (or only `<prefix>.<topic>` for the topics given), read back in stream order. */
export async function testStream(topics?: readonly string[]) {
  const prefix = uniqueName("t");
  const name = prefix.toUpperCase();
  const nc = await connect({ servers: new URL(natsUrl).host });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name, subjects: topics ? topics.map((topic) => `${prefix}.${topic}`) : [`${prefix}.>`], duplicate_window: 120_000_000_000 });
  return {
    name,
    subjectPrefix: `${prefix}.`,
    async count(): Promise<number> {
      return (await jsm.streams.info(name)).state.messages;
    },
    /** Every message in the stream, in stream order. */
    async read(): Promise<Received[]> {
      const total = (await jsm.streams.info(name)).state.messages;
      const out: Received[] = [];
      if (total === 0) return out;
      const consumer = await jetstream(nc).consumers.get(name);
      const messages = await consumer.consume();
      for await (const m of messages) {
        out.push({ id: m.headers?.get("Nats-Msg-Id") ?? "", key: m.headers?.get("Errand-Key") || undefined, body: m.json(), topic: m.subject.slice(prefix.length + 1) });
        if (out.length >= total) break;
      }
      await messages.close();
      return out;
    },
    async close(): Promise<void> {
      await jsm.streams.delete(name).catch(() => {});
      await nc.close();
    },
  };
}

/** A durable RabbitMQ queue bound to amq.topic for `<prefix>.#` (a new name unless given), read back in order. */
export async function testQueue(name?: string) {
  const prefix = name ?? uniqueName("t");
  const connection = await amqp.connect(amqpUrl);
  connection.on("error", () => {}); // a broker restart closes it; the restart test reopens by name
  const channel = await connection.createChannel();
  channel.on("error", () => {});
  await channel.assertQueue(prefix, { durable: true });
  await channel.bindQueue(prefix, "amq.topic", `${prefix}.#`);
  return {
    name: prefix,
    topicPrefix: `${prefix}.`,
    async count(): Promise<number> {
      return (await channel.checkQueue(prefix)).messageCount;
    },
    /** Every message in the queue, in queue order (each acknowledged). */
    async read(): Promise<Received[]> {
      const out: Received[] = [];
      for (;;) {
        const m = await channel.get(prefix, { noAck: true });
        if (m === false) return out;
        out.push({ id: String(m.properties.messageId), key: m.properties.headers?.["errand-key"] as string | undefined, body: JSON.parse(m.content.toString()), topic: m.fields.routingKey.slice(prefix.length + 1) });
      }
    },
    async close(): Promise<void> {
      await channel.deleteQueue(prefix).catch(() => {});
      await connection.close().catch(() => {});
    },
  };
}

/** Fails unless, for every key, the `seq` of its bodies rises by one from 0; returns the count per key. */
export function checkOrderPerKey(received: readonly Received[]): Map<string, number> {
  const next = new Map<string, number>();
  for (const r of received) {
    const { key, seq } = r.body as { key: string; seq: number };
    const expected = next.get(key) ?? 0;
    if (seq !== expected) throw new Error(`key ${key}: got seq ${seq} where ${expected} was due (message ${r.id})`);
    next.set(key, expected + 1);
  }
  return next;
}

/**
 * A JetStream work-queue stream for a JetStream job queue's tests: it captures
 * `<prefix>.>`, so a queue with `subjectPrefix` set to {@link subjectPrefix} lands in it.
 * `options` override the stream's settings (retention, subjects, max_msg_size) for the
 * bad-input tests.
 */
export async function testJobStream(options: { retention?: "workqueue" | "limits"; subjects?: string[]; max_msg_size?: number; num_replicas?: number } = {}, servers = natsUrl) {
  const prefix = uniqueName("j");
  const name = prefix.toUpperCase();
  const nc = await connect({ servers: servers.split(",").map((url) => new URL(url).host) });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name, subjects: options.subjects ?? [`${prefix}.>`], retention: options.retention ?? "workqueue", duplicate_window: 120_000_000_000, ...(options.max_msg_size ? { max_msg_size: options.max_msg_size } : {}), num_replicas: options.num_replicas ?? 1 });
  return {
    name,
    subjectPrefix: `${prefix}.`,
    nc,
    jsm,
    /** Messages in the stream: a work queue holds the jobs not yet acknowledged. */
    async count(): Promise<number> {
      return (await jsm.streams.info(name)).state.messages;
    },
    async close(): Promise<void> {
      await jsm.streams.delete(name).catch(() => {});
      await nc.close();
    },
  };
}
