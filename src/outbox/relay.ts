/**
 * The relay: reads the outbox in id order, sends each batch to the broker (a key's messages
 * one after the other, different keys pipelined), waits for the broker's acknowledgements
 * and deletes what was acknowledged, in one transaction per batch.
 *
 * Order per key across several relays: each batch first takes the transaction-level
 * advisory lock of every free partition (partition = hash of the key, 16 of them) and reads
 * only those partitions' rows, so a key's messages are in one relay's hands at a time, and
 * the next holder of the partition sees what the previous one deleted. A key whose message
 * was not acknowledged keeps that message and every later one of the batch in the outbox,
 * so the retry sends them in order again.
 */
import { monotonicClock } from "../clock.js";
import type { Driver } from "../driver/types.js";
import { ErrandError, ValidationError } from "../errors.js";
import type { Service } from "../maintenance/service.js";
import { outboxChannelFor, outboxPartitions, outboxQueriesFor } from "../sql/outbox.js";
import { checkKeys, integerIn, nonNegativeMs, positiveMs } from "../validate.js";
import { type OutboxMessage, type Transport, type TransportOptions, brokerOf, openTransport, redactUrl } from "./transport.js";

/** Options of {@link Errand.relay}. */
export interface RelayOptions extends TransportOptions {
  /** The broker: `nats://host:4222` (JetStream) or `amqp://user:password@host:5672` (RabbitMQ). */
  readonly to: string;
  /** Messages per batch (one transaction, one pipelined send). Default 500. */
  readonly batchSize?: number;
  /** Fallback poll when no notification arrives. Default 1 s. */
  readonly pollIntervalMs?: number;
  /** Backoff after a broker or database error: doubling from `baseDelayMs` (250) up to `maxDelayMs` (30 s), with jitter. */
  readonly retry?: { readonly baseDelayMs?: number; readonly maxDelayMs?: number };
  /** Receives what the relay does. */
  readonly onEvent?: (event: RelayEvent) => void;
}

/** What a relay reports through `onEvent`. */
export type RelayEvent =
  | { readonly type: "connected"; readonly to: string }
  | { readonly type: "sent"; readonly messages: number; readonly ms: number }
  | { readonly type: "error"; readonly error: Error; readonly retryInMs: number };

/** What one batch did. */
export interface RelayResult {
  /** Messages acknowledged by the broker and deleted from the outbox. */
  readonly sent: number;
  /** Messages left in the outbox for the next batch (not acknowledged, or behind one of their key that was not). */
  readonly kept: number;
  /** True when every partition was held by another relay. */
  readonly busy: boolean;
}

interface Row {
  id: string | number;
  topic: string;
  key: string | null;
  message: string;
  headers: Record<string, string> | string;
  created_at: Date | string;
}

const optionKeys = ["to", "batchSize", "pollIntervalMs", "retry", "onEvent", "subjectPrefix", "stream", "exchange", "messageIdPrefix", "publishTimeoutMs"];

/**
 * Relays the outbox to a broker. A {@link Service}: `start()` connects (an unreachable
 * broker is an error `broker_unreachable`) and relays until `stop()`; broker and database
 * errors after that are retried with backoff, nothing is lost. Several relays may run at
 * once. Create one with `errand.relay({ to })`, which `errand.close()` stops.
 *
 * @example
 * ```ts
 * const relay = errand.relay({ to: "nats://127.0.0.1:4222", stream: "EVENTS" });
 * await relay.start();
 * ```
 */
export class Relay implements Service<RelayResult> {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #options: RelayOptions;
  readonly #batchSize: number;
  readonly #pollIntervalMs: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  #transport: Transport | undefined;
  #running = false;
  #loop: Promise<void> = Promise.resolve();
  #wake: (() => void) | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #failures = 0;

  constructor(driver: Driver, schema: string, options: RelayOptions) {
    checkKeys(options, "", optionKeys);
    brokerOf(options.to);
    checkKeys(options.retry, "retry", ["baseDelayMs", "maxDelayMs"]);
    this.#driver = driver;
    this.#schema = schema;
    this.#options = options;
    this.#batchSize = integerIn(options.batchSize ?? 500, "batchSize", 1, 10_000);
    this.#pollIntervalMs = positiveMs(options.pollIntervalMs ?? 1_000, "pollIntervalMs");
    this.#baseDelayMs = nonNegativeMs(options.retry?.baseDelayMs ?? 250, "retry.baseDelayMs");
    this.#maxDelayMs = nonNegativeMs(options.retry?.maxDelayMs ?? 30_000, "retry.maxDelayMs");
    if (options.publishTimeoutMs !== undefined) positiveMs(options.publishTimeoutMs, "publishTimeoutMs");
    for (const field of ["subjectPrefix", "stream", "exchange", "messageIdPrefix"] as const) {
      const value = options[field];
      if (value !== undefined && (typeof value !== "string" || /[\s*>\u0000]/.test(value))) {
        throw new ValidationError(field, "must be a string without spaces or wildcards");
      }
    }
  }

  /** Connects to the broker (failing with `broker_unreachable` when it cannot), then relays in the background until {@link stop}. */
  async start(): Promise<void> {
    if (this.#running) return;
    await this.#connect();
    this.#unlisten = await this.#driver.listen(outboxChannelFor(this.#schema), () => this.#wake?.(), () => this.#wake?.());
    this.#running = true;
    this.#loop = this.#run();
  }

  /** Stops after the batch in progress and closes the broker connection. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
    await this.#unlisten?.();
    this.#unlisten = undefined;
    await this.#transport?.close();
    this.#transport = undefined;
  }

  /** One batch now (connecting first if needed), whether or not the relay was started. */
  async runOnce(): Promise<RelayResult> {
    if (!this.#transport || this.#transport.broken) {
      await this.#transport?.close().catch(() => {});
      this.#transport = undefined;
      await this.#connect();
    }
    return this.#batch(this.#transport!);
  }

  async #connect(): Promise<void> {
    this.#transport = await openTransport(this.#options.to, this.#options);
    this.#emit({ type: "connected", to: redactUrl(this.#options.to) });
  }

  async #run(): Promise<void> {
    while (this.#running) {
      let pause: number;
      try {
        const result = await this.runOnce();
        this.#failures = 0;
        if (result.kept > 0) throw new Error(`${result.kept} message(s) not acknowledged`);
        pause = result.sent === this.#batchSize ? 0 : this.#pollIntervalMs;
      } catch (error) {
        pause = this.#backoff();
        this.#emit({ type: "error", error: error instanceof Error ? error : new Error(String(error)), retryInMs: pause });
      }
      if (pause > 0 && this.#running) await this.#sleep(pause);
    }
  }

  #backoff(): number {
    const ceiling = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** Math.min(this.#failures++, 20));
    return Math.round(ceiling * (0.5 + Math.random() / 2));
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }

  async #batch(transport: Transport): Promise<RelayResult> {
    const q = outboxQueriesFor(this.#schema);
    const started = monotonicClock.now();
    const result = await this.#driver.transaction(async (tx): Promise<RelayResult & { errors: Error[] }> => {
      const order = shuffledPartitions();
      const { rows: locked } = await tx.query<{ partitions: number[] | null }>(q.lockPartitions.text, [order]);
      const partitions = locked[0]?.partitions ?? null;
      if (partitions === null || partitions.length === 0) return { sent: 0, kept: 0, busy: true, errors: [] };
      const { rows } = await tx.query<Row>(q.readBatch.text, [partitions.length === outboxPartitions ? null : partitions, this.#batchSize]);
      if (rows.length === 0) return { sent: 0, kept: 0, busy: false, errors: [] };
      const messages = rows.map(toMessage);
      const sent: string[] = [];
      const errors: Error[] = [];
      const stuckKeys = new Set<string>();
      // In waves: the first message of every key (and every keyless one), then the second of
      // every key, …, each wave pipelined and acknowledged before the next. A key whose
      // message was not acknowledged sends nothing more this batch, so a broker can never
      // hold a key's later message without its earlier one.
      for (const wave of waves(messages)) {
        const live = wave.filter((m) => m.key === null || !stuckKeys.has(m.key));
        if (live.length === 0) break;
        // A wave that fails as a whole fails its keys; the earlier waves' acknowledged messages are still deleted.
        const outcomes = await transport.send(live).catch((error: unknown) => live.map(() => (error instanceof Error ? error : new Error(String(error)))));
        live.forEach((m, i) => {
          const error = outcomes[i];
          if (error === undefined) sent.push(m.id);
          else {
            errors.push(error);
            if (m.key !== null) stuckKeys.add(m.key);
          }
        });
      }
      if (sent.length > 0) await tx.query(q.deleteSent.text, [sent]);
      return { sent: sent.length, kept: messages.length - sent.length, busy: false, errors };
    });
    if (result.sent > 0) this.#emit({ type: "sent", messages: result.sent, ms: monotonicClock.now() - started });
    if (result.errors.length > 0) {
      throw new ErrandError("broker_unreachable", `${result.kept} of ${result.sent + result.kept} message(s) kept in the outbox: ${result.errors[0]!.message}`, { cause: result.errors[0] });
    }
    return { sent: result.sent, kept: result.kept, busy: result.busy };
  }

  #emit(event: RelayEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch {
      // a listener's error is not the relay's
    }
  }
}

/** The batch in waves: the n-th wave holds the n-th message of each key, in id order; keyless messages go in the first. */
function waves(messages: readonly OutboxMessage[]): OutboxMessage[][] {
  const out: OutboxMessage[][] = [];
  const seen = new Map<string, number>();
  for (const m of messages) {
    const n = m.key === null ? 0 : (seen.get(m.key) ?? 0);
    if (m.key !== null) seen.set(m.key, n + 1);
    (out[n] ??= []).push(m);
  }
  return out;
}

function shuffledPartitions(): number[] {
  const list = Array.from({ length: outboxPartitions }, (_, i) => i);
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
  return list;
}

function toMessage(row: Row): OutboxMessage {
  return {
    id: String(row.id),
    topic: row.topic,
    key: row.key,
    body: row.message,
    headers: typeof row.headers === "string" ? (JSON.parse(row.headers) as Record<string, string>) : row.headers,
    createdAt: new Date(row.created_at),
  };
}
