/**
 * The RabbitMQ side of the relay: `amqplib`, imported here only. Messages go to
 * `exchange` (default `amq.topic`) with the topic as routing key, persistent, with
 * `message-id` set, on a confirm channel: a message counts as sent when RabbitMQ confirms
 * it. `mandatory` is set, and a message no queue is bound for comes back and counts as not
 * sent, so it waits in the outbox instead of being dropped.
 */
import { ErrandError } from "../errors.js";
import { type OutboxMessage, type Transport, type TransportOptions, importOptional, redactUrl, withTimeout } from "./transport.js";

/** Connects to RabbitMQ at `url`, opens a confirm channel and checks the exchange. */
export async function openAmqp(url: string, options: TransportOptions): Promise<Transport> {
  const amqp = await importOptional<typeof import("amqplib")>("amqplib", "errand relay --to amqp://…");
  const timeoutMs = options.publishTimeoutMs ?? 10_000;
  const exchange = options.exchange ?? "amq.topic";
  let connection: Awaited<ReturnType<typeof amqp.connect>>;
  try {
    connection = await withTimeout(amqp.connect(url, { timeout: Math.min(timeoutMs, 5_000) }), timeoutMs, "timed out");
  } catch (error) {
    throw new ErrandError("broker_unreachable", `cannot connect to RabbitMQ at ${redactUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
  let broken = false;
  let why: Error | undefined;
  connection.on("error", (error: Error) => {
    why = error;
  });
  connection.on("close", () => {
    broken = true;
  });
  const channel = await connection.createConfirmChannel();
  channel.on("error", (error: Error) => {
    why = error;
  });
  channel.on("close", () => {
    broken = true;
  });
  try {
    await channel.checkExchange(exchange);
  } catch (error) {
    await connection.close().catch(() => {});
    throw new ErrandError("broker_unreachable", `RabbitMQ at ${redactUrl(url)} has no exchange '${exchange}': declare it first (or bind to amq.topic, the default)`, { cause: error });
  }
  const returned = new Set<string>();
  channel.on("return", (message: { properties: { messageId?: string } }) => {
    if (message.properties.messageId !== undefined) returned.add(message.properties.messageId);
  });
  const idPrefix = options.messageIdPrefix ?? "";
  return {
    get broken() {
      return broken;
    },
    async send(messages: readonly OutboxMessage[]) {
      if (broken) throw why ?? new Error("the RabbitMQ connection is closed");
      const confirms = messages.map(
        (m) =>
          new Promise<Error | undefined>((resolve) => {
            const messageId = `${idPrefix}${m.id}`;
            channel.publish(
              exchange,
              m.topic,
              Buffer.from(m.body),
              {
                persistent: true,
                mandatory: true,
                messageId,
                contentType: "application/json",
                timestamp: Math.floor(m.createdAt.getTime() / 1000),
                headers: m.key === null ? m.headers : { ...m.headers, "errand-key": m.key },
              },
              (error: unknown) => {
                if (error) resolve(error instanceof Error ? error : new Error(`RabbitMQ refused message ${messageId} (nack)`));
                else if (returned.delete(messageId)) resolve(new Error(`no queue is bound to exchange '${exchange}' for routing key '${m.topic}': the message waits in the outbox`));
                else resolve(undefined);
              },
            );
          }),
      );
      try {
        return await withTimeout(Promise.all(confirms), timeoutMs, `RabbitMQ did not confirm within ${timeoutMs} ms`);
      } catch (error) {
        broken = true; // confirms may never come on this channel: start a new one
        throw error;
      }
    },
    async close() {
      broken = true;
      await connection.close().catch(() => {});
    },
  };
}
