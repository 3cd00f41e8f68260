/**
 * The NATS side of a JetStream queue: connects (the clients are optional dependencies,
 * imported here only), checks that the stream can carry the queue's jobs and creates or
 * updates the queue's durable pull consumer. Every problem is a clear error at start, not
 * a job lost later.
 */
import { ErrandError } from "../errors.js";
import { importOptional, redactUrl } from "../outbox/transport.js";
import type { ResolvedQueue } from "./options.js";

type Nats = typeof import("@nats-io/transport-node");
type Js = typeof import("@nats-io/jetstream");
/** A connection to NATS. */
export type NatsConnection = Awaited<ReturnType<Nats["connect"]>>;
/** The queue's consumer, as the worker pulls from it. */
export type JobConsumer = Awaited<ReturnType<ReturnType<Js["jetstream"]>["consumers"]["get"]>>;
/** What JetStream says about the queue's consumer. */
export type ConsumerInfo = Awaited<ReturnType<JobConsumer["info"]>>;
/** JetStream's management API on the connection. */
export type JetStreamManager = Awaited<ReturnType<Js["jetstreamManager"]>>;

/** An open connection to a queue's stream and consumer. */
export interface QueueConnection {
  readonly nc: NatsConnection;
  readonly consumer: JobConsumer;
  readonly jsm: JetStreamManager;
  /** Publishes with JetStream's acknowledgement. */
  readonly client: ReturnType<Js["jetstream"]>;
  close(): Promise<void>;
}

const purpose = "a JetStream job queue";
/** Bytes a message's body holds beyond its payload (kind, maxAttempts, retry) plus headers, at most. */
export const envelopeBytes = 2048;

/** The `host:port` list of a `nats://a:4222,nats://b:4222` URL list. */
function serverList(servers: string): string[] {
  return servers.split(",").map((url) => {
    const parsed = new URL(url.trim());
    return `${parsed.hostname}:${parsed.port || "4222"}`;
  });
}

/**
 * Connects and checks the stream; with `ensureConsumer`, creates the durable consumer or
 * updates its ack wait. Gives up after `waitMs` (a worker waits out a cluster's election;
 * a stats read must answer soon).
 */
export async function openQueue(queue: ResolvedQueue, ensureConsumer: boolean, name = "errand-jetstream-worker", waitMs = 20_000): Promise<QueueConnection> {
  const nats = await importOptional<Nats>("@nats-io/transport-node", purpose);
  const js = await importOptional<Js>("@nats-io/jetstream", purpose);
  let nc: NatsConnection;
  try {
    nc = await nats.connect({ servers: serverList(queue.servers), timeout: Math.min(5_000, waitMs), reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 250, name });
  } catch (error) {
    throw new ErrandError("broker_unreachable", `cannot connect to NATS at ${redactUrl(queue.servers)}: ${(error as Error).message}`, { cause: error });
  }
  // A cluster electing a new leader answers with timeouts or "no responders" for a few
  // seconds: those are retried for up to waitMs; a missing or unfit stream fails at once.
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      const { consumer, jsm } = await checkAndBind(js, nc, queue, ensureConsumer, Math.min(10_000, waitMs));
      return { nc, consumer, jsm, client: js.jetstream(nc), close: () => nc.close() };
    } catch (error) {
      const definite = error instanceof ErrandError || /not found/i.test((error as Error).message);
      if (definite || Date.now() > deadline) {
        await nc.close();
        if (error instanceof ErrandError) throw error;
        throw new ErrandError("broker_unreachable", `JetStream at ${redactUrl(queue.servers)} refused queue '${queue.queue}': ${(error as Error).message}`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

async function checkAndBind(js: Js, nc: NatsConnection, queue: ResolvedQueue, ensureConsumer: boolean, timeout: number): Promise<{ consumer: JobConsumer; jsm: JetStreamManager }> {
  const jsm = await js.jetstreamManager(nc, { timeout });
  const info = await jsm.streams.info(queue.stream).catch((error: unknown) => {
    if (!/not found/i.test((error as Error).message)) throw error;
    throw new ErrandError(
      "broker_unreachable",
      `JetStream stream '${queue.stream}' is not usable at ${redactUrl(queue.servers)} (${(error as Error).message}): create it first as a work queue capturing ${queue.subject}, e.g. nats stream add ${queue.stream} --subjects '${queue.subject}' --retention work`,
      { cause: error },
    );
  });
  const problem = streamProblem(info.config, queue);
  if (problem) throw new ErrandError("broker_unreachable", `JetStream stream '${queue.stream}' cannot carry queue '${queue.queue}': ${problem}`);
  if (ensureConsumer) {
    const config = { durable_name: queue.consumer, ack_policy: js.AckPolicy.Explicit, ack_wait: queue.ackWaitMs * 1_000_000, max_deliver: -1, filter_subject: queue.subject };
    const existing = await jsm.consumers.info(queue.stream, queue.consumer).catch((error: unknown) => {
      if (/not found/i.test((error as Error).message)) return undefined;
      throw error;
    });
    if (existing === undefined) await jsm.consumers.add(queue.stream, config);
    else if (existing.config.ack_wait !== config.ack_wait || existing.config.filter_subject !== config.filter_subject) {
      await jsm.consumers.update(queue.stream, queue.consumer, { ack_wait: config.ack_wait, filter_subject: config.filter_subject });
    }
  }
  // JetStream's default request timeout is 5 s; a stats read's is shorter.
  return { consumer: await js.jetstream(nc, { timeout: Math.min(5_000, timeout) }).consumers.get(queue.stream, queue.consumer), jsm };
}

/** Why the stream cannot carry the queue's jobs, or undefined. */
function streamProblem(config: { retention: string; subjects?: string[]; max_msg_size?: number }, queue: ResolvedQueue): string | undefined {
  if (config.retention !== "workqueue") return `its retention is '${config.retention}'; a job queue needs a work-queue stream (retention workqueue), which removes each job once acknowledged`;
  if (!(config.subjects ?? []).some((pattern) => subjectMatches(pattern, queue.subject))) {
    return `its subjects (${(config.subjects ?? []).join(", ") || "none"}) do not capture the queue's subject ${queue.subject}`;
  }
  const max = config.max_msg_size ?? -1;
  if (max > 0 && max < queue.maxPayloadBytes + envelopeBytes) {
    return `its max_msg_size (${max} bytes) is below the queue's maxPayloadBytes (${queue.maxPayloadBytes}) plus ${envelopeBytes} bytes of envelope: lower maxPayloadBytes or raise the stream's limit`;
  }
  return undefined;
}

/** Whether the NATS subject pattern (with `*` and `>`) matches `subject`. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return s.length > i;
    if (i >= s.length || (p[i] !== "*" && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}
