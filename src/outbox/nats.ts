/**
 * The JetStream side of the relay: `@nats-io/transport-node` and `@nats-io/jetstream`,
 * imported here only. Each message is published to `subjectPrefix + topic` with
 * `Nats-Msg-Id` set to its message id, so JetStream drops the copy a crash between
 * publish and delete sends again (within the stream's duplicate window, 2 minutes by
 * default). A batch is pipelined on one connection, so the stream stores it in order;
 * each publish waits for its PubAck.
 */
import { ErrandError } from "../errors.js";
import { type OutboxMessage, type Transport, type TransportOptions, importOptional, redactUrl, withTimeout } from "./transport.js";

const purpose = "errand relay --to nats://…";

/** Connects to the NATS server at `url` and checks JetStream (and the stream, when named). */
export async function openNats(url: string, options: TransportOptions): Promise<Transport> {
  const nats = await importOptional<typeof import("@nats-io/transport-node")>("@nats-io/transport-node", purpose);
  const js = await importOptional<typeof import("@nats-io/jetstream")>("@nats-io/jetstream", purpose);
  const parsed = new URL(url);
  const timeoutMs = options.publishTimeoutMs ?? 10_000;
  let nc: Awaited<ReturnType<typeof nats.connect>>;
  try {
    nc = await nats.connect({
      servers: `${parsed.hostname}:${parsed.port || "4222"}`,
      ...(parsed.username ? { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } : {}),
      timeout: Math.min(timeoutMs, 5_000),
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      name: "errand-relay",
    });
  } catch (error) {
    throw new ErrandError("broker_unreachable", `cannot connect to NATS at ${redactUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const jsm = await js.jetstreamManager(nc, { timeout: timeoutMs });
    if (options.stream !== undefined) {
      try {
        await jsm.streams.info(options.stream);
      } catch (error) {
        throw new ErrandError(
          "broker_unreachable",
          `JetStream stream '${options.stream}' is not usable at ${redactUrl(url)} (${(error as Error).message}): create it first, capturing the subjects ${options.subjectPrefix ?? ""}<topic> (e.g. nats stream add ${options.stream} --subjects '${options.subjectPrefix ?? ""}>')`,
          { cause: error },
        );
      }
    }
  } catch (error) {
    await nc.close();
    if (error instanceof ErrandError) throw error;
    throw new ErrandError("broker_unreachable", `JetStream is not enabled or not answering at ${redactUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
  const client = js.jetstream(nc, { timeout: timeoutMs });
  const prefix = options.subjectPrefix ?? "";
  const idPrefix = options.messageIdPrefix ?? "";
  const encoder = new TextEncoder();
  return {
    get broken() {
      return nc.isClosed();
    },
    async send(messages: readonly OutboxMessage[]) {
      const acks = messages.map((m) => {
        const h = nats.headers();
        for (const [name, value] of Object.entries(m.headers)) h.set(name, value);
        if (m.key !== null) h.set("Errand-Key", m.key);
        return client.publish(`${prefix}${m.topic}`, encoder.encode(m.body), {
          msgID: `${idPrefix}${m.id}`,
          headers: h,
          timeout: timeoutMs,
          ...(options.stream !== undefined ? { expect: { streamName: options.stream } } : {}),
        });
      });
      const settled = await withTimeout(Promise.allSettled(acks), timeoutMs + 1_000, `JetStream did not acknowledge within ${timeoutMs} ms`);
      return settled.map((s) => (s.status === "fulfilled" ? undefined : s.reason instanceof Error ? s.reason : new Error(String(s.reason))));
    },
    async close() {
      await nc.close();
    },
  };
}
