/**
 * A worker of a JetStream queue: pulls jobs from the queue's durable consumer and runs
 * them with errand's executor, so handlers see the same context and outcomes as on
 * PostgreSQL. The lease is the consumer's ack wait, extended while the handler runs by
 * in-progress acks; a failure is a negative ack delayed by errand's backoff; a permanent
 * failure or the last attempt becomes a dead row in PostgreSQL, then the message is
 * acknowledged (a work-queue stream keeps a terminated message). Delivery is at least
 * once, as on PostgreSQL.
 */
import { monotonicClock } from "../clock.js";
import { defaultConcurrency, defaultShutdownTimeoutMs } from "../defaults.js";
import type { Driver } from "../driver/types.js";
import { ErrandError } from "../errors.js";
import type { ResolvedKind } from "../options.js";
import { jetstreamQueriesFor } from "../sql/jetstream.js";
import { checkKeys, integerIn, nonNegativeMs } from "../validate.js";
import { type ClaimedJob, type Outcome, type RunWrites, describeError, execute } from "../worker/executor.js";
import type { Handlers } from "../worker/handlers.js";
import { AttemptErrors } from "./attempt-errors.js";
import { type QueueConnection, openQueue } from "./connection.js";
import { decodeJob } from "./message.js";
import type { ResolvedQueue } from "./options.js";

/** Options of {@link JetStreamQueue.worker}. */
export interface JetStreamWorkerOptions<H = Handlers> {
  /** Handlers by kind, as for `errand.worker`. */
  readonly handlers: H;
  /** Handlers run at once; the worker fetches only as many messages as it has free slots. Default 10. */
  readonly concurrency?: number;
  /** How long `stop()` waits for running handlers before aborting their signal. Default 25 s. */
  readonly shutdownTimeoutMs?: number;
  /** How often the worker moves the queue's ready PostgreSQL rows (retried dead jobs) to the outbox. Default 1 s; 0 never. */
  readonly forwardIntervalMs?: number;
  /** Receives what the worker does. */
  readonly onEvent?: (event: JetStreamWorkerEvent) => void;
}

/** What a JetStream worker reports. `outcome` is what became of the message. */
export type JetStreamWorkerEvent =
  | { readonly type: "started"; readonly id: string; readonly kind: string; readonly attempt: number }
  | { readonly type: "finished"; readonly id: string; readonly kind: string; readonly attempt: number; readonly outcome: "done" | "retry" | "snoozed" | "dead" | "lease_expired" | "returned"; readonly ms: number }
  | { readonly type: "error"; readonly error: Error };

interface Running {
  done: Promise<void>;
  readonly controller: AbortController;
  /** Gives the message back to JetStream at once (a nak) and drops the handler's outcome; set once the job is decoded. */
  release?: () => void;
}

type JsMsg = import("@nats-io/jetstream").JsMsg;

/**
 * How long before its ack wait ends (counted from the handler's start or its last
 * in-progress ack) a worker gives up a job's lease. JetStream counts from the delivery, a
 * little earlier: the margin covers the hand-over, and a heartbeat's trip to the server.
 */
export const leaseMarginMs = (ackWaitMs: number): number => Math.min(1_000, ackWaitMs / 10);

const unsupported = (what: string) => Promise.reject(new ErrandError("unsupported", `${what} is not available on the JetStream transport: the job's state lives in the stream, not in PostgreSQL`));
const writes: RunWrites = { checkpoint: () => unsupported("ctx.checkpoint()"), complete: () => unsupported("ctx.complete(tx)") };

/** Runs a JetStream queue's jobs; `start()` connects and pulls, `stop()` stops pulling and finishes running handlers. */
export class JetStreamWorker {
  readonly #queue: ResolvedQueue;
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #kinds: ReadonlyMap<string, ResolvedKind>;
  readonly #handlers: Handlers;
  readonly #concurrency: number;
  readonly #shutdownMs: number;
  readonly #forwardMs: number;
  readonly #onEvent: ((event: JetStreamWorkerEvent) => void) | undefined;
  readonly #running = new Set<Running>();
  #connection: QueueConnection | undefined;
  #attemptErrors: AttemptErrors | undefined;
  #batch: Awaited<ReturnType<QueueConnection["consumer"]["fetch"]>> | undefined;
  #pulling: Promise<void> = Promise.resolve();
  #stopping = false;
  #slotFreed: (() => void) | undefined;
  #forwardTimer: NodeJS.Timeout | undefined;
  #connected = false;

  constructor(target: { readonly driver: Driver; readonly schema: string; readonly kinds: ReadonlyMap<string, ResolvedKind> }, queue: ResolvedQueue, options: JetStreamWorkerOptions) {
    checkKeys(options, "", ["handlers", "concurrency", "shutdownTimeoutMs", "forwardIntervalMs", "onEvent"]);
    if (typeof options.handlers !== "object" || options.handlers === null) throw new ErrandError("invalid_argument", "handlers: must be an object of kind → handler");
    this.#queue = queue;
    this.#driver = target.driver;
    this.#schema = target.schema;
    this.#kinds = target.kinds;
    this.#handlers = options.handlers;
    this.#concurrency = integerIn(options.concurrency ?? defaultConcurrency, "concurrency", 1, 10_000);
    this.#shutdownMs = nonNegativeMs(options.shutdownTimeoutMs ?? defaultShutdownTimeoutMs, "shutdownTimeoutMs");
    this.#forwardMs = nonNegativeMs(options.forwardIntervalMs ?? 1_000, "forwardIntervalMs");
    this.#onEvent = options.onEvent;
  }

  /** Connects (an unusable stream is an error `broker_unreachable`, naming why), creates the consumer if needed and starts pulling. */
  async start(): Promise<void> {
    if (this.#connection) throw new ErrandError("worker_state", "this JetStream worker was started already");
    this.#connection = await openQueue(this.#queue, true);
    this.#attemptErrors = new AttemptErrors(this.#connection, this.#queue, (error) => this.#emit({ type: "error", error }));
    this.#connected = true;
    void this.#watch(this.#connection);
    this.#pulling = this.#pull(this.#connection);
    if (this.#forwardMs > 0) this.#scheduleForward(0);
  }

  /**
   * Stops pulling (a message delivered as it stops goes back at once), waits up to
   * `shutdownTimeoutMs` for running handlers (then aborts their signal with `shutdown`
   * and returns their messages), acknowledges their outcomes, and disconnects.
   */
  async stop(): Promise<void> {
    if (!this.#connection || this.#stopping) return;
    this.#stopping = true;
    clearTimeout(this.#forwardTimer);
    await this.#batch?.close();
    this.#slotFreed?.();
    await this.#pulling;
    const all = Promise.all([...this.#running].map((r) => r.done));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#shutdownMs)));
    await Promise.race([all, late]);
    clearTimeout(timer);
    for (const r of this.#running) {
      r.controller.abort(new ErrandError("shutdown", "the worker is stopping past its shutdown deadline; the job will run again"));
      r.release?.();
    }
    // A handler that ignores its signal is not waited for (its message is back in the
    // stream, as the PostgreSQL worker releases its job); a dead row being written is.
    await Promise.all([...this.#running].filter((r) => !r.release).map((r) => r.done));
    await this.#connection.nc.drain().catch(() => this.#connection?.close());
  }

  /**
   * Fetches only as many messages as there are free handler slots, so each message starts
   * as it is delivered: its ack wait runs from its delivery, which JetStream replicates
   * (an in-progress ack sent for a message that waited in hand could be lost when the
   * consumer's leader fails over, and the job delivered again while it runs).
   */
  async #pull(connection: QueueConnection): Promise<void> {
    while (!this.#stopping) {
      while (!this.#stopping && this.#running.size >= this.#concurrency) await new Promise<void>((resolve) => (this.#slotFreed = resolve));
      if (this.#stopping) break;
      try {
        this.#batch = await connection.consumer.fetch({ max_messages: this.#concurrency - this.#running.size, expires: 1_000 });
        for await (const msg of this.#batch) {
          if (this.#stopping) msg.nak(); // delivered as the worker stopped: back for another worker now
          else this.#start(msg);
        }
      } catch (error) {
        if (this.#stopping) break;
        this.#emit({ type: "error", error: error instanceof Error ? error : new Error(String(error)) });
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  #start(msg: JsMsg): void {
    const entry: Running = { controller: new AbortController(), done: Promise.resolve() };
    entry.done = this.#run(msg, entry).finally(() => {
      this.#running.delete(entry);
      this.#slotFreed?.();
    });
    this.#running.add(entry);
  }

  async #run(msg: JsMsg, entry: Running): Promise<void> {
    const { controller } = entry;
    const started = monotonicClock.now();
    const id = msg.headers?.get("Nats-Msg-Id") || `${this.#queue.stream}:${msg.seq}`;
    const attempt = msg.info.deliveryCount;
    let job: ClaimedJob & { readonly policy: import("../retry-policy.js").RetryPolicy };
    try {
      job = decodeJob(id, msg.string(), attempt, new Date(msg.info.timestampNanos / 1_000_000), this.#kinds);
    } catch (error) {
      await this.#bury(msg, { id, kind: "(undecodable)", payload: msg.string(), attempt, maxAttempts: 1, retry: null }, `the message is not a job: ${describeError(error)}`, started);
      return;
    }
    if (attempt > job.maxAttempts) {
      // Its last attempt's worker stopped (or could not record the outcome) before acknowledging.
      await this.#bury(msg, job, `delivered again after its last attempt (${job.maxAttempts}): its worker stopped or lost the lease before acknowledging`, started);
      return;
    }
    this.#emit({ type: "started", id, kind: job.kind, attempt });
    const finish = (result: "done" | "retry" | "snoozed" | "dead" | "lease_expired" | "returned") =>
      this.#emit({ type: "finished", id, kind: job.kind, attempt, outcome: result, ms: monotonicClock.now() - started });
    let released = false;
    entry.release = () => {
      released = true;
      msg.nak();
      finish("returned");
    };
    // The lease: ack wait from the last in-progress ack this worker sent while connected.
    let leaseUntil = monotonicClock.now() + this.#queue.ackWaitMs;
    const beat = () => {
      if (controller.signal.aborted) return;
      if (monotonicClock.now() >= leaseUntil - leaseMarginMs(this.#queue.ackWaitMs)) {
        controller.abort(new ErrandError("lease_expired", `the job's ack wait (${this.#queue.ackWaitMs} ms) ran out without a heartbeat reaching JetStream: another worker may run it`));
        return;
      }
      if (this.#connected) {
        msg.working();
        leaseUntil = monotonicClock.now() + this.#queue.ackWaitMs;
      }
    };
    const heartbeat = setInterval(beat, Math.max(50, this.#queue.ackWaitMs / 4));
    let outcome: Outcome;
    try {
      outcome = await execute(job, this.#handlers, controller, job.policy, writes);
    } finally {
      clearInterval(heartbeat);
      // From here the outcome is being written: stop() waits for it rather than releasing the message.
      entry.release = undefined;
    }
    if (released) return; // stop() gave the message back past its deadline
    const reason = controller.signal.aborted ? (controller.signal.reason as ErrandError | undefined)?.code : undefined;
    if (reason === "lease_expired") return finish("lease_expired"); // not ours any more: no ack, whatever it did
    try {
      if (outcome.type === "done") {
        // Not confirmed (a confirmed ack halves the rate): a lost ack means one more delivery after the ack wait, as a crash would.
        msg.ack();
        finish("done");
      } else if (outcome.type === "snoozed") {
        msg.nak(Math.round(outcome.delayMs));
        finish("snoozed");
      } else if (outcome.permanent || attempt >= job.maxAttempts) {
        await this.#bury(msg, job, outcome.error, started);
      } else {
        // Kept before the nak, so the attempt that buries the job finds it.
        await this.#attemptErrors!.record(id, attempt, outcome.error).catch((error: unknown) =>
          this.#emit({ type: "error", error: new ErrandError("outcome_not_written", `attempt ${attempt}'s error of job ${id} was not kept: its dead row will lack it`, { cause: error }) }),
        );
        msg.nak(Math.round(outcome.delayMs));
        finish("retry");
      }
    } catch (error) {
      // Not acknowledged: JetStream delivers it again after the ack wait.
      this.#emit({ type: "error", error: error instanceof Error ? error : new Error(String(error)) });
    }
  }

  /** The job as a dead row in PostgreSQL, then the message acknowledged (removed from the work queue). */
  async #bury(msg: JsMsg, job: Pick<ClaimedJob, "id" | "kind" | "payload" | "attempt" | "maxAttempts" | "retry">, error: string, started: number): Promise<void> {
    const { bury } = jetstreamQueriesFor(this.#schema);
    const earlier = await this.#attemptErrors!.read(job.id, job.attempt).catch((cause: unknown) => {
      this.#emit({ type: "error", error: new ErrandError("outcome_not_written", `the earlier attempts' errors of dead job ${job.id} could not be read: its row keeps the last one`, { cause }) });
      return [];
    });
    try {
      await this.#driver.run(bury, [
        job.kind,
        JSON.stringify(job.payload ?? null),
        Math.min(job.attempt, job.maxAttempts),
        job.maxAttempts,
        this.#queue.queue,
        job.retry === null ? null : JSON.stringify(job.retry),
        error,
        job.id,
        `jetstream:${this.#queue.stream}:${job.id}`,
        JSON.stringify(earlier),
      ]);
    } catch (cause) {
      // PostgreSQL could not take it: leave the message to come back after the ack wait.
      this.#emit({ type: "error", error: new ErrandError("outcome_not_written", `dead job ${job.id} could not be written to PostgreSQL; JetStream delivers it again`, { cause }) });
      return;
    }
    try {
      await msg.ackAck();
      if (earlier.length > 0) void this.#attemptErrors!.forget(job.id).catch(() => {}); // else they age out
    } catch (cause) {
      // Delivered again after the ack wait: that delivery finds the row there and buries nothing twice.
      this.#emit({ type: "error", error: new ErrandError("outcome_not_written", `dead job ${job.id} was not acknowledged to JetStream`, { cause }) });
      return;
    }
    this.#emit({ type: "finished", id: job.id, kind: job.kind, attempt: job.attempt, outcome: "dead", ms: monotonicClock.now() - started });
  }

  /** Follows the connection: in-progress acks sent while disconnected would be lost, so they do not extend the lease. */
  async #watch(connection: QueueConnection): Promise<void> {
    for await (const status of connection.nc.status()) {
      if (status.type === "disconnect") this.#connected = false;
      else if (status.type === "reconnect") this.#connected = true;
    }
  }

  #scheduleForward(ms: number): void {
    this.#forwardTimer = setTimeout(() => {
      void this.forward()
        .catch((error: unknown) => this.#emit({ type: "error", error: error instanceof Error ? error : new Error(String(error)) }))
        .finally(() => {
          if (!this.#stopping) this.#scheduleForward(this.#forwardMs);
        });
    }, ms);
  }

  /** Moves up to 500 of the queue's ready PostgreSQL rows (dead jobs retried) to the outbox; returns how many. */
  async forward(): Promise<number> {
    const { forward } = jetstreamQueriesFor(this.#schema);
    const { rows } = await this.#driver.run<{ moved: number }>(forward, [this.#queue.queue, this.#queue.topic, 500]);
    return rows[0]?.moved ?? 0;
  }

  #emit(event: JetStreamWorkerEvent): void {
    try {
      this.#onEvent?.(event);
    } catch {
      // a listener's error is not the worker's
    }
  }
}
