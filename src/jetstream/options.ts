/**
 * A JetStream queue's settings, validated once: where its jobs go (the outbox topic, the
 * NATS subject the relay publishes them to, the work-queue stream), and how its consumer
 * leases them (ack wait).
 */
import { defaultMaxPayloadBytes } from "../defaults.js";
import { ValidationError } from "../errors.js";
import { checkTopic, maxTopicLength } from "../outbox/publish.js";
import { brokerOf } from "../outbox/transport.js";
import { checkKeys, checkQueueName, integerIn, positiveMs } from "../validate.js";

/** Options of a {@link JetStreamQueue}. */
export interface JetStreamQueueOptions {
  /** The queue's name: its dead jobs carry it in PostgreSQL, `errand dead list` shows it. */
  readonly queue: string;
  /** The NATS server, `nats://host:4222` (with JetStream enabled). */
  readonly servers: string;
  /** The work-queue stream (retention `workqueue`) that holds the queue's jobs; it must exist and capture the subject. */
  readonly stream: string;
  /** The outbox topic the jobs are published under. Default `errand.jobs.<queue>` (a `:` in the queue name becomes `_`). */
  readonly topic?: string;
  /** The relay's `subjectPrefix`, if it has one: the subject consumed is `subjectPrefix + topic`. Default none. */
  readonly subjectPrefix?: string;
  /** The durable consumer's name, created by the first worker. Default `errand_<queue>` (non-word characters as `_`). */
  readonly consumer?: string;
  /** The lease: JetStream's ack wait. A job whose worker stops heartbeating is delivered again after it. Default 30 s. */
  readonly ackWaitMs?: number;
  /** Largest payload accepted at enqueue, in bytes of JSON (the stream's `max_msg_size` must hold it). Default 256 KiB. */
  readonly maxPayloadBytes?: number;
}

/** {@link JetStreamQueueOptions} with defaults filled in. */
export interface ResolvedQueue {
  readonly queue: string;
  readonly servers: string;
  readonly stream: string;
  readonly topic: string;
  readonly subject: string;
  readonly consumer: string;
  readonly ackWaitMs: number;
  readonly maxPayloadBytes: number;
}

const keys = ["queue", "servers", "stream", "topic", "subjectPrefix", "consumer", "ackWaitMs", "maxPayloadBytes"];
const name = /^[A-Za-z0-9_-]{1,64}$/;

/** Validates `options`; errors name the field, and nothing connects yet. */
export function resolveQueue(options: JetStreamQueueOptions): ResolvedQueue {
  checkKeys(options, "", keys);
  const queue = checkQueueName(options.queue, "queue");
  if (brokerOf(options.servers) !== "nats") throw new ValidationError("servers", "must be a NATS URL: nats://host:4222");
  const stream = checkName(options.stream, "stream");
  const topic = checkTopic(options.topic ?? `errand.jobs.${queue.replaceAll(":", "_")}`, "topic");
  const prefix = options.subjectPrefix ?? "";
  if (typeof prefix !== "string" || (prefix !== "" && !/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.$/.test(prefix))) {
    throw new ValidationError("subjectPrefix", "must be dot-separated words ending with a dot, e.g. app. (no wildcards)");
  }
  if (prefix.length + topic.length > maxTopicLength + 50) throw new ValidationError("subjectPrefix", "makes the subject too long");
  return {
    queue,
    servers: options.servers,
    stream,
    topic,
    subject: `${prefix}${topic}`,
    consumer: checkName(options.consumer ?? `errand_${queue.replace(/[^A-Za-z0-9_-]/g, "_")}`.slice(0, 64), "consumer"),
    ackWaitMs: positiveMs(options.ackWaitMs ?? 30_000, "ackWaitMs"),
    maxPayloadBytes: integerIn(options.maxPayloadBytes ?? defaultMaxPayloadBytes, "maxPayloadBytes", 1, 64 * 1024 * 1024),
  };
}

function checkName(value: unknown, field: string): string {
  if (typeof value !== "string" || !name.test(value)) throw new ValidationError(field, `must be a JetStream name: 1–64 letters, digits, _ or - (got ${JSON.stringify(value)})`);
  return value;
}
