import { cancelJobs } from "./cancel.js";
import { type DeadLetters, type DeadSelector, deadLetters } from "./dead-letters.js";
import type { Driver, Queryable } from "./driver/types.js";
import { type EnqueueOptions, type EnqueueResult, type EnqueueTarget, type JobSpec, enqueueJobs } from "./enqueue.js";
import { ValidationError } from "./errors.js";
import { type JobRow, toJob } from "./job.js";
import type { JobMap, JobOf, Kind, UntypedJobs } from "./jobs.js";
import { migrate } from "./migrations/migrate.js";
import { type ErrandOptions, type ErrandSettings, openDatabase, resolveSettings } from "./open.js";
import type { ResolvedKind } from "./options.js";
import type { Json } from "./payload.js";
import { type Queries, queriesFor } from "./sql/jobs.js";
import { waitChannelFor } from "./sql/statement.js";
import { type WaitOptions, Waiters } from "./wait.js";
import { checkId, checkKeys } from "./validate.js";
import { Worker, type WorkerOptions } from "./worker/worker.js";
import type { Handlers } from "./worker/handlers.js";
import { Limits } from "./limits.js";
import { Schedules } from "./schedules/schedules.js";
import { type PurgeOptions, type PurgeResult, Purger, type PurgerOptions, purgeJobs } from "./maintenance/purger.js";
import { Rescuer, type RescuerOptions } from "./maintenance/rescuer.js";
import type { Service } from "./maintenance/service.js";
import { Alerter, type AlerterOptions } from "./observe/alerts.js";
import { tableIncidents } from "./observe/incidents.js";
import { type QueueStats, readStats } from "./observe/stats.js";
import type { JetStreamStatsSource } from "./jetstream/queue.js";
import { traceEnqueue } from "./observe/tracing.js";
import { type Batch, type BatchMember, type BatchResult, type BatchSpec, type ListBatchesOptions, createBatch, listBatchMembers, listBatches, readBatch } from "./batches.js";
import { type PauseTarget, type Paused, readPaused, setPaused } from "./queues.js";
import { type MessageSpec, type PublishOptions, type PublishResult, publishMessages } from "./outbox/publish.js";
import { Relay, type RelayOptions } from "./outbox/relay.js";

/** @deprecated The same type as {@link Queryable}, under its former name. */
export type SqlClient = Queryable;

/** {@link WorkerOptions} with the handlers typed by the job map: each handler's payload is its kind's. */
export type TypedWorkerOptions<Jobs = UntypedJobs> = Omit<WorkerOptions, "handlers"> & {
  /** Handlers by job kind (some or all of the map's). The worker claims only jobs of these kinds. */
  readonly handlers: Handlers<Jobs>;
};

/**
 * The errand client: enqueue jobs, run workers, inspect and act on dead letters. Typed by
 * a job map (kind → payload type) when opened with `jobs` from {@link defineJobs} or as
 * `Errand.open<Jobs>()`; untyped (any kind, payloads checked at run time) otherwise.
 *
 * @example
 * ```ts
 * const jobs = defineJobs({ send_receipt: { payload: json<{ orderId: number }>() } });
 * const errand = await Errand.open({ jobs, connectionString: process.env.DATABASE_URL });
 * await errand.enqueue("send_receipt", { orderId: 1042 }, { dedupeKey: "receipt:1042" });
 * await errand.close();
 * ```
 */
export class Errand<Jobs extends JobMap<Jobs> = UntypedJobs> {
  /** The driver errand talks through. */
  readonly driver: Driver;
  /** The schema holding errand's tables. */
  readonly schema: string;
  /** Per-kind settings, validated. */
  readonly kinds: ReadonlyMap<string, ResolvedKind>;
  readonly #queries: Queries;
  readonly #enqueue: EnqueueTarget;
  readonly #maxPayloadBytes: number;
  readonly #workers = new Set<Worker>();
  readonly #waiters: Waiters;
  #closed: Promise<void> | undefined;
  /** Services created by {@link purger}, {@link rescuer} and {@link alerter}: `close()` stops them. */
  readonly #services = new Set<Service>();
  /** By queue name: a queue created again replaces the last. */
  readonly #jetstreamQueues = new Map<string, JetStreamStatsSource>();
  /** Recurring jobs: declare, list, pause, resume, remove, and the scheduler service. */
  readonly schedules: Schedules<Jobs>;
  /** Concurrency and rate limits by concurrency key, shared by every worker (see the README's "Concurrency and rate limits"). */
  readonly limits: Limits;
  /** Dead letters: the jobs a person must look at. */
  readonly dead: DeadLetters<Jobs>;

  private constructor(driver: Driver, schema: string, settings: ErrandSettings) {
    const { kinds, maxPayloadBytes, schemas } = settings;
    this.driver = driver;
    this.schema = schema;
    this.kinds = kinds;
    this.#enqueue = { driver, schema, kinds, maxPayloadBytes, schemas, own: { running: 0, pending: undefined, sending: false, sessions: new Set() } };
    this.#maxPayloadBytes = maxPayloadBytes;
    this.#queries = queriesFor(schema);
    this.#waiters = new Waiters(driver, waitChannelFor(schema), (id) => this.getJob(id));
    this.limits = new Limits(driver, schema);
    this.dead = deadLetters<Jobs>(driver, schema);
    // Slots are enqueued as untyped specs: their kind and payload were checked when declared.
    this.schedules = new Schedules<Jobs>(driver, schema, (specs, options) => traceEnqueue(specs, () => enqueueJobs(this.#enqueue, specs, options)), undefined, undefined, schemas);
  }

  /**
   * Connects (or opens the embedded database), validates options and migrates. The errand
   * is typed by `options.jobs` (from {@link defineJobs}), or by the type argument:
   * `Errand.open<Jobs>()`.
   */
  static async open<Jobs extends JobMap<Jobs> = UntypedJobs>(options: ErrandOptions<Jobs> = {}): Promise<Errand<Jobs>> {
    const { driver, schema, settings } = await openDatabase(options);
    return new Errand<Jobs>(driver, schema, settings);
  }

  /** Wraps an existing driver (adapters, tests). Does not migrate. */
  static fromDriver<Jobs extends JobMap<Jobs> = UntypedJobs>(
    driver: Driver,
    options: Omit<ErrandOptions<Jobs>, "connectionString" | "db" | "dataDir" | "migrate" | "poolSize" | "onConnectionError"> = {},
  ): Errand<Jobs> {
    checkKeys(options, "", ["schema", "jobs", "kinds", "maxPayloadBytes"]);
    const { schema, ...rest } = resolveSettings(options);
    return new Errand<Jobs>(driver, schema, rest);
  }

  /** Applies pending migrations; returns the versions applied. */
  migrate(): Promise<number[]> {
    return migrate(this.driver, this.schema);
  }

  /**
   * Enqueues one job. Pass `db` to enqueue inside your own transaction. On a typed errand
   * the kind must be one of the map's and the payload of its type; a kind with a schema
   * has its payload checked (and replaced by the schema's output) before anything is written.
   *
   * @example
   * ```ts
   * await client.query("BEGIN");
   * await client.query("INSERT INTO orders (id, total) VALUES (1042, 59000)");
   * await errand.enqueue("send_receipt", { orderId: 1042 }, { db: client, dedupeKey: "receipt:1042" });
   * await client.query("COMMIT"); // rollback instead, and the job never existed
   * ```
   */
  async enqueue<K extends Kind<Jobs>>(kind: K, payload: Jobs[K], options: EnqueueOptions = {}): Promise<EnqueueResult> {
    if (typeof options !== "object" || options === null) throw new ValidationError("options", "must be an object");
    const { db, ...rest } = options;
    const [result] = await traceEnqueue([{ kind }], () => enqueueJobs(this.#enqueue, [{ kind, payload, ...rest }], { db, single: true }));
    return result!;
  }

  /** Enqueues many jobs in one statement (one round trip). Results are in input order; an error names the job (`jobs[3].payload.…`). */
  enqueueMany(specs: readonly JobSpec<Jobs>[], options: { readonly db?: Queryable | undefined } = {}): Promise<EnqueueResult[]> {
    return traceEnqueue(specs, () => enqueueJobs(this.#enqueue, specs, { db: options?.db }));
  }

  /**
   * Enqueues a batch: its member jobs and, once every member has finished (done, dead or
   * cancelled), the `then` job, enqueued exactly once by the database with the outcome in
   * its payload's `batch` (a `BatchSummary`). The batch and its members are written by
   * one statement, on `db` when given: all or nothing.
   *
   * @example
   * ```ts
   * const { batchId } = await errand.batch({
   *   jobs: imageIds.map((imageId) => ({ kind: "resize", payload: { imageId } })),
   *   then: { kind: "album_ready", payload: { albumId: 7 } },
   * });
   * ```
   */
  batch(spec: BatchSpec<Jobs>, options: { readonly db?: Queryable | undefined } = {}): Promise<BatchResult> {
    const members: readonly { readonly kind: string }[] = Array.isArray(spec?.jobs) ? spec.jobs : [];
    return traceEnqueue(members, () => createBatch(this.#enqueue, spec as BatchSpec, options?.db));
  }

  /** A batch's counts, failed member ids and callback job, or `null` for an unknown id. */
  getBatch(id: string | number): Promise<Batch | null> {
    return readBatch(this.driver, this.schema, id);
  }

  /** Batches, newest first; `status` picks open or finished ones, `beforeId` pages. */
  listBatches(options: ListBatchesOptions = {}): Promise<Batch[]> {
    return listBatches(this.driver, this.schema, options);
  }

  /** A batch's members by id (page with `afterId`); a NotFoundError for an unknown batch. */
  batchMembers(id: string | number, options: { readonly afterId?: string | number; readonly limit?: number } = {}): Promise<BatchMember[]> {
    return listBatchMembers(this.driver, this.schema, id, options);
  }

  /**
   * Writes a message to the outbox for `errand relay` to deliver to NATS JetStream or
   * RabbitMQ. Pass `db` to publish inside your own transaction: commit and it will be
   * delivered, roll back and it never existed. Messages with the same `key` are delivered
   * in the order they were published. See "Beyond one database" in the README.
   *
   * @example
   * ```ts
   * await errand.publish("orders.created", { orderId: 1042 }, { db: client, key: "order:1042" });
   * ```
   */
  async publish(topic: string, message: Json, options: PublishOptions = {}): Promise<PublishResult> {
    if (typeof options !== "object" || options === null) throw new ValidationError("options", "must be an object");
    const { db, ...rest } = options;
    const [result] = await publishMessages({ driver: this.driver, schema: this.schema, maxPayloadBytes: this.#maxPayloadBytes }, [{ topic, message, ...rest }], { db, single: true });
    return result!;
  }

  /** Writes many messages to the outbox in one statement; results in input order, an error names the message (`messages[3].topic`). */
  publishMany(messages: readonly MessageSpec[], options: { readonly db?: Queryable | undefined } = {}): Promise<PublishResult[]> {
    return publishMessages({ driver: this.driver, schema: this.schema, maxPayloadBytes: this.#maxPayloadBytes }, messages, { db: options?.db });
  }

  /**
   * A service that relays the outbox to a broker (`nats://…` or `amqp://…`); `start()`
   * connects and relays until `stop()`, and `errand.close()` stops it. Several may run at once.
   *
   * @example
   * ```ts
   * const relay = errand.relay({ to: "nats://127.0.0.1:4222", stream: "EVENTS" });
   * await relay.start();
   * ```
   */
  relay(options: RelayOptions): Relay {
    return this.#service(new Relay(this.driver, this.schema, options));
  }

  /**
   * One job by id, or `null`. On a typed errand, `job.kind` narrows `job.payload`. The
   * payload is what was stored, not checked again: a row inserted by plain SQL, or under
   * an older job map, may not match its kind's type.
   */
  async getJob(id: string | number): Promise<JobOf<Jobs> | null> {
    const { rows } = await this.driver.run<JobRow>(this.#queries.getJob, [checkId(id, "id")]);
    return rows[0] ? (toJob(rows[0]) as JobOf<Jobs>) : null;
  }

  /**
   * Waits until job `id` has finished — `done` (its `result` is what the handler
   * returned), or `dead` — and resolves with it. It does not poll: it listens for the
   * notice the worker's completion sends (one per batch of completions) and reads the job
   * when its id is announced, and once more after a lost listening connection is
   * restored. `onProgress` receives each new progress value the handler reports.
   * Rejects with a `NotFoundError` for an unknown id, an `ErrandError` of code
   * `wait_timeout` after `timeoutMs`, the signal's reason when `signal` aborts, and code
   * `closed` when the errand is closed first.
   *
   * @example
   * ```ts
   * const { id } = await errand.enqueue("resize", { imageId: 7 });
   * const job = await errand.waitFor(id, { timeoutMs: 30_000, onProgress: (p) => console.log("progress", p) });
   * if (job.status === "done") console.log(job.result);
   * ```
   */
  async waitFor(id: string | number, options: WaitOptions<JobOf<Jobs>> = {}): Promise<JobOf<Jobs>> {
    return (await this.#waiters.wait(checkId(id, "id"), options as WaitOptions)) as JobOf<Jobs>;
  }

  /** Queue figures per kind and in total: depth, oldest ready age, recent outcomes, dead letters; and the JetStream queues this client knows. */
  stats(): Promise<QueueStats> {
    return readStats(this.driver, this.schema, [...this.#jetstreamQueues.values()]);
  }

  /** Makes {@link stats} (and the dashboard and `/metrics` built on it) report a JetStream queue; `new JetStreamQueue(errand, …)` calls it. */
  trackJetStreamQueue(queue: JetStreamStatsSource): void {
    this.#jetstreamQueues.set(queue.settings.queue, queue);
  }

  /** Deletes done jobs past the retention (default 7 days) in small batches; dead jobs only if asked. */
  purge(options: PurgeOptions = {}): Promise<PurgeResult> {
    return purgeJobs(this.driver, this.schema, options);
  }

  /**
   * Cancels jobs for good: status `cancelled`, never run or retried. A ready or scheduled
   * job never runs; a running job's handler signal aborts (code `"cancelled"`) within about
   * a second, its result is ignored, and a handler that ignores the signal frees its slot
   * after a short grace. By ids: all or nothing — an unknown id raises a NotFoundError, a
   * finished one (done, dead, cancelled) an ErrandError `"job_finished"`, and nothing
   * changes. By kind: its ready and running jobs. Returns the ids cancelled.
   */
  cancel(selector: { readonly ids: readonly (string | number)[] } | { readonly kind: Kind<Jobs> }): Promise<string[]> {
    return cancelJobs(this.driver, this.schema, selector);
  }

  /**
   * Pauses a queue or a kind in every worker: within about a second none starts another of
   * its jobs (a notice reaches the workers at once, a poll every second covers a missed
   * one). Running handlers finish; jobs claimed ahead and not started go back unspent;
   * nothing is lost and no attempt is charged. Enqueueing still works. Resolves true when
   * it was not paused before. See {@link resume}.
   *
   * @example
   * ```ts
   * await errand.pause({ queue: "email" }); // the mail provider is down
   * await errand.resume({ queue: "email" });
   * ```
   */
  pause(target: PauseTarget<Kind<Jobs>>): Promise<boolean> {
    return setPaused(this.driver, this.schema, target, true);
  }

  /** Undoes {@link pause}: workers take the queue's or kind's jobs again at once. Resolves true when it was paused. */
  resume(target: PauseTarget<Kind<Jobs>>): Promise<boolean> {
    return setPaused(this.driver, this.schema, target, false);
  }

  /** The queues and kinds paused now. */
  paused(): Promise<Paused> {
    return readPaused(this.driver, this.schema);
  }

  /**
   * A worker for this database. Call `start()` to run it, `stop()` to shut it down. On a
   * typed errand each handler's payload is its kind's, and a kind not in the map is a
   * compile error.
   *
   * @example
   * ```ts
   * const worker = errand.worker({ handlers: { send_receipt: async ({ orderId }, ctx) => sendReceipt(orderId, ctx.idempotencyKey) } });
   * await worker.start();
   * ```
   */
  worker(options: TypedWorkerOptions<Jobs>): Worker {
    // Each handler takes its kind's payload; the worker calls it only with jobs of that kind.
    const worker = new Worker(this.driver, this.schema, this.kinds, options as WorkerOptions);
    this.#workers.add(worker);
    worker.onStopped(() => this.#workers.delete(worker));
    return worker;
  }

  /**
   * A service that purges done jobs past the retention every `intervalMs` (1 hour by
   * default), the first time at `start()`; `errand.close()` stops it. Safe in every process.
   *
   * @example
   * ```ts
   * const purger = errand.purger({ olderThanMs: 3 * 86_400_000 });
   * await purger.start();
   * ```
   */
  purger(options: PurgerOptions = {}): Purger {
    return this.#service(new Purger(this.driver, this.schema, options));
  }

  /**
   * A service that returns expired leases to `ready` (or `dead` on their last attempt) every
   * `intervalMs` (30 s by default), for workers started with `rescueIntervalMs: 0`;
   * `errand.close()` stops it. Safe in any number of processes.
   *
   * @example
   * ```ts
   * const rescuer = errand.rescuer({ onRescue: ({ ready, dead }) => console.log({ ready, dead }) });
   * await rescuer.start();
   * ```
   */
  rescuer(options: RescuerOptions = {}): Rescuer {
    return this.#service(new Rescuer(this.driver, this.schema, options));
  }

  /**
   * A service that checks the alert rules against this database's stats every `intervalMs`
   * (30 s by default) and notifies once when an incident opens and once when it resolves.
   * Open incidents are kept in the `alert_incidents` table unless `store` says otherwise, so
   * several alerting processes, and restarts, notify each incident once. `errand.close()` stops it.
   *
   * @example
   * ```ts
   * const alerter = errand.alerter({ notifiers: [webhookNotifier({ url: "https://hooks.example.com/errand" })] });
   * await alerter.start();
   * ```
   */
  alerter(options: Omit<AlerterOptions, "stats"> & { readonly stats?: AlerterOptions["stats"] }): Alerter {
    const { stats, store, ...rest } = options;
    return this.#service(new Alerter({ ...rest, stats: stats ?? (() => this.stats()), store: store ?? tableIncidents(this.driver, this.schema) }));
  }

  #service<S extends Service>(service: S): S {
    this.#services.add(service);
    return service;
  }

  /** Stops this client's workers and services and closes what errand opened. Closing twice closes once. */
  close(): Promise<void> {
    return (this.#closed ??= this.#close());
  }

  async #close(): Promise<void> {
    await Promise.all([...this.#workers].map((worker) => worker.stop()));
    await Promise.all([...this.#services].map((service) => service.stop()));
    await this.schedules.stopSchedulers();
    await this.#waiters.close();
    await Promise.all(this.#enqueue.own.sessions);
    await this.driver.close();
  }
}

export type { DeadLetters, DeadSelector, EnqueueOptions, EnqueueResult, ErrandOptions, JobSpec, Json, MessageSpec, PublishOptions, PublishResult };
