/**
 * A queue whose jobs travel through NATS JetStream instead of the jobs table: enqueued
 * into the outbox in the caller's PostgreSQL transaction, carried to a work-queue stream by
 * `errand relay`, run by {@link JetStreamWorker}s with errand's handler API. Dead jobs land
 * in PostgreSQL's jobs table, so `errand dead list|retry` and the dashboard keep working.
 */
import type { Driver, Queryable } from "../driver/types.js";
import { ErrandError } from "../errors.js";
import type { JobMap, Kind, UntypedJobs } from "../jobs.js";
import type { ResolvedKind } from "../options.js";
import { type PublishResult, publishMessages } from "../outbox/publish.js";
import { jetstreamQueriesFor } from "../sql/jetstream.js";
import type { Handlers } from "../worker/handlers.js";
import { type JetStreamEnqueueOptions, encodeJob } from "./message.js";
import { envelopeBytes, openQueue } from "./connection.js";
import { type JetStreamQueueOptions, type ResolvedQueue, resolveQueue } from "./options.js";
import { JetStreamWorker, type JetStreamWorkerOptions } from "./worker.js";

/** What {@link JetStreamQueue.stats} reads: JetStream's consumer info and the outbox. */
export interface JetStreamQueueStats {
  readonly queue: string;
  /** Jobs in the stream not yet delivered. */
  readonly pending: number;
  /** Jobs delivered and not yet acknowledged: running, or waiting for their ack wait to run out. */
  readonly ackPending: number;
  /** Jobs delivered more than once and not yet acknowledged. */
  readonly redelivered: number;
  /** Pull requests waiting for jobs (idle worker slots). */
  readonly waiting: number;
  /** Jobs committed in PostgreSQL that the relay has not published yet. */
  readonly outbox: number;
}

/** The errand client, as a JetStream queue uses it (an `Errand` is one). */
export interface ErrandLike<Jobs> {
  readonly driver: Driver;
  readonly schema: string;
  readonly kinds: ReadonlyMap<string, ResolvedKind>;
  /** Only for the job map's type. */
  enqueue<K extends Kind<Jobs>>(kind: K, payload: Jobs[K], options?: object): Promise<unknown>;
  /** Makes `errand.stats()` report the queue (an `Errand` has it). */
  trackJetStreamQueue?(queue: JetStreamStatsSource): void;
}

/** What `errand.stats()` reads of a JetStream queue. */
export interface JetStreamStatsSource {
  readonly settings: { readonly queue: string };
  stats(options?: { readonly timeoutMs?: number }): Promise<JetStreamQueueStats>;
}

/**
 * A job queue on JetStream. Jobs are written in your PostgreSQL transaction (to the
 * outbox); `errand relay --to nats://…` publishes them to the work-queue stream; workers
 * created here run them. The stream must exist with retention `workqueue` and capture the
 * queue's subject (`errand.jobs.<queue>` by default).
 *
 * @example
 * ```ts
 * const media = new JetStreamQueue(errand, { queue: "media", servers: "nats://127.0.0.1:4222", stream: "JOBS" });
 * await media.enqueue("send_receipt", { orderId: 1042 });
 * const worker = media.worker({ handlers: { send_receipt: async ({ orderId }) => { await sendReceipt(orderId); } }, concurrency: 20 });
 * await worker.start();
 * ```
 */
export class JetStreamQueue<Jobs extends JobMap<Jobs> = UntypedJobs> {
  /** The settings, validated. */
  readonly settings: ResolvedQueue;
  readonly #target: { readonly driver: Driver; readonly schema: string; readonly kinds: ReadonlyMap<string, ResolvedKind> };

  constructor(errand: ErrandLike<Jobs>, options: JetStreamQueueOptions) {
    this.settings = resolveQueue(options);
    this.#target = { driver: errand.driver, schema: errand.schema, kinds: errand.kinds };
    errand.trackJetStreamQueue?.(this);
  }

  /** Enqueues one job into the outbox, in `options.db`'s transaction when given. Returns the outbox id: the job's id on JetStream. */
  async enqueue<K extends Kind<Jobs>>(kind: K, payload: Jobs[K], options: JetStreamEnqueueOptions = {}): Promise<PublishResult> {
    const [result] = await this.#publish([{ kind, payload, options }], options.db, true);
    return result!;
  }

  /** Enqueues many jobs in one statement; nothing is written unless every one is valid. */
  async enqueueMany(jobs: readonly { readonly [K in Kind<Jobs>]: { readonly kind: K; readonly payload: Jobs[K]; readonly maxAttempts?: number } }[Kind<Jobs>][], options: { readonly db?: Queryable } = {}): Promise<PublishResult[]> {
    return this.#publish(
      jobs.map(({ kind, payload, ...rest }) => ({ kind, payload, options: rest })),
      options.db,
      false,
    );
  }

  async #publish(jobs: readonly { kind: unknown; payload: unknown; options: JetStreamEnqueueOptions }[], db: Queryable | undefined, single: boolean): Promise<PublishResult[]> {
    const { kinds, driver, schema } = this.#target;
    const messages = jobs.map((job, i) => ({
      topic: this.settings.topic,
      message: encodeJob(job.kind, job.payload, { ...job.options, db: undefined }, kinds, this.settings.maxPayloadBytes, single ? "" : `jobs[${i}].`),
    }));
    return publishMessages({ driver, schema, maxPayloadBytes: this.settings.maxPayloadBytes + envelopeBytes }, messages, { db, single });
  }

  /** A worker of this queue; `start()` it, `stop()` it (`errand.close()` does not). */
  worker(options: JetStreamWorkerOptions<Handlers<Jobs>>): JetStreamWorker {
    return new JetStreamWorker(this.#target, this.settings, options as JetStreamWorkerOptions);
  }

  /**
   * The queue's figures from JetStream's consumer info (the consumer must exist: a worker
   * creates it) and the outbox; fails after `timeoutMs` (default 20 s) when NATS does not answer.
   */
  async stats(options: { readonly timeoutMs?: number } = {}): Promise<JetStreamQueueStats> {
    const connection = await openQueue(this.settings, false, "errand-jetstream-stats", options.timeoutMs).catch((error: unknown) => {
      if (error instanceof Error && /consumer not found/i.test(error.message)) {
        throw new ErrandError("broker_unreachable", `JetStream queue '${this.settings.queue}' has no consumer '${this.settings.consumer}' yet: the first worker creates it`, { cause: error });
      }
      throw error;
    });
    try {
      const info = await connection.consumer.info();
      const { rows } = await this.#target.driver.run<{ n: number }>(jetstreamQueriesFor(this.#target.schema).outboxCount, [this.settings.topic]);
      return { queue: this.settings.queue, pending: info.num_pending, ackPending: info.num_ack_pending, redelivered: info.num_redelivered, waiting: info.num_waiting, outbox: rows[0]?.n ?? 0 };
    } finally {
      await connection.close();
    }
  }
}
