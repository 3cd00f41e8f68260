import type { Command } from "commander";
import * as defaults from "../defaults.js";
import type { RelayEvent } from "../outbox/relay.js";
import { redactUrl } from "../outbox/transport.js";
import { type DatabaseFlags, databaseLabel, intArg, logLine, openFromFlags, requireDatabase, secondsArg, withDatabase } from "./common.js";

interface RelayFlags extends DatabaseFlags {
  readonly to: string;
  readonly stream?: string;
  readonly subjectPrefix?: string;
  readonly exchange?: string;
  readonly messageIdPrefix?: string;
  readonly batchSize?: number;
  readonly pollInterval?: number;
  readonly verbose?: boolean;
}

/** `errand relay --to nats://…|amqp://…`: delivers the outbox to a broker until SIGTERM or SIGINT. */
export function register(program: Command): void {
  withDatabase(
    program
      .command("relay")
      .description("deliver the outbox (errand.publish) to NATS JetStream or RabbitMQ, in order per key, until SIGTERM or SIGINT; several may run at once")
      .requiredOption("--to <url>", "the broker: nats://host:4222 (JetStream) or amqp://user:password@host:5672 (RabbitMQ)")
      .option("--stream <name>", "JetStream: the stream the subjects must land in (checked at start; it must exist)")
      .option("--subject-prefix <prefix>", "JetStream: prepended to each topic to make its subject (e.g. events.)")
      .option("--exchange <name>", "RabbitMQ: the exchange to publish to, with the topic as routing key (default amq.topic; it must exist)")
      .option("--message-id-prefix <prefix>", "prepended to the outbox id to make the broker's message id (Nats-Msg-Id, message-id)")
      .option("--batch-size <n>", "messages per batch (default 500)", intArg(1, 10_000))
      .option("--poll-interval <seconds>", "fallback poll when no notification arrives (default 1)", secondsArg(false))
      .option("--verbose", "also log every batch sent"),
    { embeddedByDefault: false },
  ).action(async (flags: RelayFlags) => {
    let signals = 0;
    const running: { stop?: () => Promise<void> } = {}; // set once connected
    const shutdown = (signal: NodeJS.Signals) => {
      if (++signals > 1) process.exit(130);
      logLine({ level: "info", event: "shutting_down", signal });
      setTimeout(() => process.exit(1), 30_000).unref();
      if (running.stop) void running.stop().then(() => process.exit(0), () => process.exit(1));
    };
    process.on("SIGTERM", shutdown);
    process.on("SIGINT", shutdown);
    requireDatabase(flags, "errand relay");
    logLine({ level: "info", event: "starting", database: databaseLabel(flags), schema: flags.schema ?? defaults.defaultSchema, to: redactUrl(flags.to) });
    const errand = await openFromFlags(flags, { onConnectionError: (error) => logLine({ level: "warn", event: "connection_error", error: error.message }) });
    const relay = errand.relay({
      to: flags.to,
      ...(flags.stream !== undefined ? { stream: flags.stream } : {}),
      ...(flags.subjectPrefix !== undefined ? { subjectPrefix: flags.subjectPrefix } : {}),
      ...(flags.exchange !== undefined ? { exchange: flags.exchange } : {}),
      ...(flags.messageIdPrefix !== undefined ? { messageIdPrefix: flags.messageIdPrefix } : {}),
      ...(flags.batchSize !== undefined ? { batchSize: flags.batchSize } : {}),
      ...(flags.pollInterval !== undefined ? { pollIntervalMs: flags.pollInterval } : {}),
      onEvent: (event) => logEvent(event, flags.verbose === true),
    });
    running.stop = () => relay.stop().then(() => errand.close());
    await relay.start();
    if (signals > 0) await running.stop().then(() => process.exit(0));
  });
}

function logEvent(event: RelayEvent, verbose: boolean): void {
  switch (event.type) {
    case "sent":
      if (verbose) logLine({ level: "info", event: "sent", messages: event.messages, ms: Math.round(event.ms) });
      return;
    case "error":
      logLine({ level: "warn", event: "relay_error", error: event.error.message, retryInMs: event.retryInMs });
      return;
    default:
      logLine({ level: "info", event: event.type, to: event.to });
  }
}
