import { type Command, InvalidArgumentError } from "commander";
import { ValidationError } from "../errors.js";
import type { Errand } from "../client.js";
import { type JetStreamQueueOptions, resolveQueue } from "../jetstream/options.js";
import { JetStreamQueue } from "../jetstream/queue.js";

/** The flags that name JetStream queues (`errand worker`, `errand stats`, `errand dashboard`). */
export interface JetStreamFlags {
  readonly jetstream?: readonly string[];
  readonly nats?: string;
  readonly stream?: string;
  readonly subjectPrefix?: string;
}

/** Which flag sets each option, so a bad value is reported under the flag the user typed. */
const flagOf: Readonly<Record<string, string>> = { queue: "--jetstream", servers: "--nats", stream: "--stream", subjectPrefix: "--subject-prefix", ackWaitMs: "--lease" };

/** Adds `--jetstream <queue>` (repeatable), `--nats <url>`, `--stream <name>` and `--subject-prefix <prefix>` to a command. */
export function withJetStream(command: Command, what: string): Command {
  return command
    .option("--jetstream <queue>", `${what} this JetStream queue (repeat for more); needs --nats and --stream`, (value: string, previous: string[] = []) => [...previous, value])
    .option("--nats <url>", "the JetStream queues' NATS server, nats://host:4222 (several comma-separated)")
    .option("--stream <name>", "the work-queue stream holding the JetStream queues' jobs")
    .option("--subject-prefix <prefix>", "the relay's subject prefix, if it has one (e.g. app.)");
}

/**
 * The JetStream queues the flags name, validated before anything connects; an error names
 * the flag. With `ackWaitMs` (a worker's `--lease`), each queue's consumer gets that ack wait.
 */
export function jetstreamQueueOptions(flags: JetStreamFlags, ackWaitMs?: number): JetStreamQueueOptions[] {
  const queues = flags.jetstream ?? [];
  if (queues.length === 0) {
    const stray = (["nats", "stream", "subjectPrefix"] as const).find((key) => flags[key] !== undefined);
    if (stray) throw new InvalidArgumentError(`${flagOf[stray === "nats" ? "servers" : stray]} applies to JetStream queues: add --jetstream QUEUE`);
    return [];
  }
  if (flags.nats === undefined || flags.stream === undefined) throw new InvalidArgumentError("--jetstream needs --nats nats://host:4222 and --stream NAME (the work-queue stream)");
  if (new Set(queues).size !== queues.length) throw new InvalidArgumentError("--jetstream: a queue is named twice");
  return queues.map((queue) => {
    const options: JetStreamQueueOptions = {
      queue,
      servers: flags.nats!,
      stream: flags.stream!,
      ...(flags.subjectPrefix !== undefined ? { subjectPrefix: flags.subjectPrefix } : {}),
      ...(ackWaitMs !== undefined ? { ackWaitMs } : {}),
    };
    try {
      resolveQueue(options);
    } catch (error) {
      if (error instanceof ValidationError) throw new InvalidArgumentError(`${flagOf[error.field] ?? error.field}: ${error.message.slice(error.field.length + 2)}`);
      throw error;
    }
    return options;
  });
}

/** The flags' JetStream queues on `errand`: each one is then reported by `errand.stats()`. */
export function jetstreamQueues(errand: Errand, queues: readonly JetStreamQueueOptions[]): JetStreamQueue[] {
  return queues.map((options) => new JetStreamQueue(errand, options));
}
