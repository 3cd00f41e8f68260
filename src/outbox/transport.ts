/**
 * The seam between the relay and a broker: a {@link Transport} sends a batch in order and
 * says, per message, whether the broker acknowledged it. The broker clients are optional
 * dependencies, imported only when a relay to that broker starts.
 */
import { ErrandError, ValidationError } from "../errors.js";

/** One outbox row as the relay hands it to a transport. */
export interface OutboxMessage {
  /** The outbox id; the broker's message id is `messageIdPrefix` + this. */
  readonly id: string;
  readonly topic: string;
  readonly key: string | null;
  /** The message as JSON text: the body sent. */
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly createdAt: Date;
}

/** A connection to a broker that the relay sends batches through. */
export interface Transport {
  /**
   * Sends `messages` in order and waits for the broker's acknowledgements: one entry per
   * message, `undefined` when the broker acknowledged it, else why not. Rejects when the
   * batch could not be sent at all.
   */
  send(messages: readonly OutboxMessage[]): Promise<(Error | undefined)[]>;
  /** True once the connection is lost for good: the relay opens a new one. */
  readonly broken: boolean;
  close(): Promise<void>;
}

/** Options of the broker side of a relay. */
export interface TransportOptions {
  /** Prepended to each topic to make the NATS subject (e.g. `events.`). Default none. */
  readonly subjectPrefix?: string;
  /** JetStream: the stream the subjects must land in; checked at start, and each publish expects it. Default: any stream that captures the subject. */
  readonly stream?: string;
  /** RabbitMQ: the exchange messages are published to with the topic as routing key. Default `amq.topic`. */
  readonly exchange?: string;
  /** Prepended to the outbox id to make the broker's message id (NATS `Nats-Msg-Id`, AMQP `message-id`). Default none. */
  readonly messageIdPrefix?: string;
  /** How long the broker may take to acknowledge a batch. Default 10 s. */
  readonly publishTimeoutMs?: number;
}

/** A broker URL with any password replaced by `***`, for logs and errors. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");
}

/** The broker a URL names: `nats` for nats://, `amqp` for amqp:// and amqps://. */
export function brokerOf(url: unknown): "nats" | "amqp" {
  if (typeof url !== "string" || url === "") throw new ValidationError("to", "must be a broker URL: nats://host:4222 (JetStream) or amqp://user:password@host:5672 (RabbitMQ)");
  if (/^nats:\/\//i.test(url)) return "nats";
  if (/^amqps?:\/\//i.test(url)) return "amqp";
  throw new ValidationError("to", `${JSON.stringify(redactUrl(url))} is not a broker URL: use nats://host:4222 (JetStream) or amqp://user:password@host:5672 (RabbitMQ)`);
}

/** Opens a transport to `url`; a broker that cannot be reached is an ErrandError `broker_unreachable`. */
export async function openTransport(url: string, options: TransportOptions = {}): Promise<Transport> {
  const broker = brokerOf(url);
  if (broker === "nats") {
    const { openNats } = await import("./nats.js");
    return openNats(url, options);
  }
  const { openAmqp } = await import("./amqp.js");
  return openAmqp(url, options);
}

/**
 * Imports an optional dependency, or says which package to install. The specifier is a
 * variable, so bundlers leave the import to run time instead of requiring the package
 * in every app that bundles errand.
 */
export async function importOptional<T>(name: string, purpose: string): Promise<T> {
  const specifier: string = name;
  try {
    return (await import(specifier)) as T;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      throw new ErrandError("missing_dependency", `${purpose} needs the package ${name}, an optional dependency of errand: npm install ${name}`, { cause: error });
    }
    throw error;
  }
}

/** Rejects after `ms` with `message`, unless `work` settles first. */
export function withTimeout<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
