import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { type Clock, systemClock } from "../clock.js";
import { ErrandError } from "../errors.js";
import type { Driver } from "../driver/types.js";
import type { ResolvedKind } from "../options.js";
import { type RetryPolicy, decodeRetryPolicy, defaultRetryPolicy } from "../retry-policy.js";
import { type Queries, byId, queriesFor } from "../sql/queries.js";
import { channelFor } from "../sql/schema.js";
import { Completer } from "./completer.js";
import { type ClaimedJob, type Outcome, describeError, execute } from "./executor.js";
import type { Handlers } from "./handlers.js";
import { LazyAbort } from "./lazy-abort.js";
import { LocalLeases } from "./leases.js";
import { type WorkerEvent, type WorkerOptions, resolveWorkerOptions } from "./worker-options.js";
import { Wake } from "./wake.js";

export type { WorkerEvent, WorkerOptions } from "./worker-options.js";

interface Running {
  readonly job: ClaimedJob;
  readonly controller: LazyAbort;
  /** Set when the result must not be written (lease lost, or released at shutdown). */
  discard: boolean;
  /**
   * Set when heartbeats could not extend the lease in time: the handler was aborted; a
   * success is still written (the write checks the lease), anything else is left to the rescuer.
   */
  expired: boolean;
}

interface ClaimRow {
  id: string | number;
  kind: string;
  payload: unknown;
  attempts: number;
  /** False for a reserved row: its attempt is spent when its handler starts. */
  started: boolean;
  max_attempts: number;
  /** jsonb as text: decoded per job, so one odd value cannot fail the batch. */
  retry: string | null;
  /** Epoch milliseconds (float8): cheaper to read than a timestamptz's text. */
  run_at_ms: number;
  created_at_ms: number;
}

/** A claimed job waiting in the buffer for a free handler slot. */
interface Buffered {
  readonly job: ClaimedJob;
  /** When it was claimed (process clock). */
  readonly since: number;
}

/**
 * Longest a job waits in an adaptive buffer before it is given back (unspent: it is only
 * reserved) for a worker with a free slot: jobs claimed ahead must not wait behind slow
 * ones. Fast jobs wait a fraction of this; a fixed `prefetch` keeps its jobs until a slot frees.
 */
export const maxBufferWaitMs = 1_000;

/**
 * Claims jobs in batches with `FOR UPDATE SKIP LOCKED`, runs up to `concurrency`
 * handlers, writes outcomes in batches, keeps leases alive with a heartbeat and
 * rescues expired leases. Create one with `errand.worker(options)`.
 */
export class Worker {
  /** This worker's id, as written to `locked_by`. */
  readonly id: string;
  readonly #driver: Driver;
  readonly #queries: Queries;
  readonly #schema: string;
  readonly #kinds: ReadonlyMap<string, ResolvedKind>;
  readonly #handlers: Handlers;
  readonly #concurrency: number;
  readonly #prefetch: number | undefined;
  /** Handlers finished in the current and the previous quarter second (adaptive prefetch). */
  #finishedNow = 0;
  #finishedBefore = 0;
  #windowStart = 0;
  readonly #leaseMs: number;
  readonly #leases: string;
  readonly #pollIntervalMs: number;
  readonly #shutdownTimeoutMs: number;
  readonly #heartbeatIntervalMs: number;
  readonly #rescueIntervalMs: number;
  readonly #onEvent: (event: WorkerEvent) => void;
  readonly #clock: Clock = systemClock;
  readonly #completer: Completer;
  readonly #wake = new Wake();
  readonly #buffer: Buffered[] = [];
  /** Buffered jobs the claim only reserved: their start is recorded when their handler starts. */
  readonly #reserved = new Set<ClaimedJob>();
  /** Claimed jobs whose row could not be decoded: they fail with this error instead of running. */
  readonly #undecodable = new Map<ClaimedJob, Error>();
  /** Keyed by the claim, not the id: a job rescued and claimed again is another claim. */
  readonly #running = new Map<ClaimedJob, Running>();
  readonly #local: LocalLeases;
  readonly #leaseCheckMs: number;
  readonly #stoppedCallbacks: (() => void)[] = [];
  #state: "idle" | "running" | "stopping" | "stopped" = "idle";
  #loop: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #timers: NodeJS.Timeout[] = [];
  #queueMayHaveJobs = true;
  /** Notifications (and rescues) seen so far: one during an empty claim keeps the queue worth a look. */
  #nudges = 0;
  #claimFailures = 0;

  constructor(driver: Driver, schema: string, kinds: ReadonlyMap<string, ResolvedKind>, options: WorkerOptions) {
    const settings = resolveWorkerOptions(options, kinds);
    this.#driver = driver;
    this.#schema = schema;
    this.#queries = queriesFor(schema);
    this.#kinds = kinds;
    this.#handlers = options.handlers;
    this.#concurrency = settings.concurrency;
    this.#prefetch = settings.prefetch;
    this.#leaseMs = settings.leaseMs;
    this.#leases = settings.leasesByKind;
    this.#pollIntervalMs = settings.pollIntervalMs;
    this.#shutdownTimeoutMs = settings.shutdownTimeoutMs;
    this.#heartbeatIntervalMs = settings.heartbeatIntervalMs;
    this.#rescueIntervalMs = settings.rescueIntervalMs;
    this.#local = new LocalLeases((kind) => kinds.get(kind)?.leaseMs ?? this.#leaseMs);
    this.#leaseCheckMs = settings.leaseCheckMs;
    this.#onEvent = options.onEvent ?? (() => {});
    this.id = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.#completer = new Completer(
      driver,
      this.#queries,
      this.id,
      settings.flushDelayMs,
      (error) => this.#emit({ type: "error", during: "complete", error }),
      this.#clock,
    );
    this.#completer.onLost = (ids) => this.#emit({ type: "lease_lost", jobIds: ids });
  }

  /** Jobs whose handlers are running now. */
  get activeCount(): number {
    return this.#running.size;
  }

  /** Starts listening, claiming and running jobs. Resolves once it is listening. */
  async start(): Promise<void> {
    if (this.#state !== "idle") throw new ErrandError("worker_state", `worker is ${this.#state}; create a new one to start again`);
    this.#state = "running";
    try {
      this.#unlisten = await this.#driver.listen(
        channelFor(this.#schema),
        () => this.#nudge(),
        () => {
          // Notifications sent while the connection was down are lost: look for jobs now.
          this.#emit({ type: "listen_restored" });
          this.#nudge();
        },
      );
    } catch (error) {
      // Polling still works without notifications.
      this.#emit({ type: "error", during: "listen", error });
    }
    if (this.#state !== "running") {
      // stop() was called while we were connecting; it could not see the listener yet.
      await this.#unlisten?.().catch(() => {});
      return;
    }
    this.#every(this.#heartbeatIntervalMs, () => this.#heartbeat());
    this.#every(this.#leaseCheckMs, () => Promise.resolve(this.#abortExpired()));
    if (this.#prefetch === undefined) this.#every(maxBufferWaitMs / 4, () => Promise.resolve(this.#releaseStale()));
    if (this.#rescueIntervalMs > 0) {
      // A worker restarted after a crash rescues its predecessor's jobs without waiting a full interval.
      void this.rescue();
      this.#every(this.#rescueIntervalMs, () => this.rescue().then(() => {}));
    }
    // The loop handles its own errors; this only makes sure a bug cannot become an unhandled rejection.
    this.#loop = this.#claimLoop().catch((error: unknown) => this.#emit({ type: "error", during: "claim", error }));
    this.#emit({ type: "started", workerId: this.id });
  }

  /**
   * Stops claiming at once, gives back claimed-but-unstarted jobs, lets running handlers
   * finish for up to `timeout` ms (default `shutdownTimeoutMs`), then aborts the rest
   * through their `AbortSignal` and returns them to `ready` without spending an attempt.
   * Writes every pending outcome before it resolves.
   */
  stop(options: { readonly timeout?: number } = {}): Promise<void> {
    if (this.#state === "idle") {
      this.#state = "stopped";
      this.#finishStop();
    }
    this.#stopping ??= this.#stop(options.timeout ?? this.#shutdownTimeoutMs);
    return this.#stopping;
  }

  /** Calls `fn` once the worker has stopped. */
  onStopped(fn: () => void): void {
    if (this.#state === "stopped") fn();
    else this.#stoppedCallbacks.push(fn);
  }

  /**
   * Claims one batch (up to `concurrency` jobs), runs it, writes the outcomes and
   * returns how many jobs ran. For tests and scripts; not while the worker is started.
   */
  async runOnce(): Promise<number> {
    if (this.#state !== "idle") throw new ErrandError("worker_state", "runOnce() is for a worker that was not started");
    const jobs = await this.#claim(this.#concurrency, this.#concurrency);
    await Promise.all(jobs.map((job) => this.#run(job)));
    await this.#completer.flush();
    return jobs.length;
  }

  /**
   * Returns expired leases to `ready` (or `dead` on their last attempt). Safe to run
   * from many workers at once. Returns how many jobs were rescued and buried.
   */
  async rescue(): Promise<{ ready: number; dead: number }> {
    try {
      const { rows } = await this.#driver.run<{ id: string; status: string }>(this.#queries.rescue, [1000]);
      const dead = rows.filter((row) => row.status === "dead").length;
      const ready = rows.length - dead;
      if (rows.length) {
        this.#emit({ type: "rescued", ready, dead });
        if (ready) this.#nudge();
      }
      return { ready, dead };
    } catch (error) {
      this.#emit({ type: "error", during: "rescue", error });
      return { ready: 0, dead: 0 };
    }
  }

  async #claimLoop(): Promise<void> {
    while (this.#state === "running") {
      const capacity = this.#concurrency + this.#prefetchNow();
      const refillAt = Math.max(1, Math.floor(capacity / 4));
      const free = capacity - this.#running.size - this.#buffer.length;
      const worthIt = free >= refillAt || (free > 0 && this.#buffer.length === 0);
      if (this.#queueMayHaveJobs && worthIt) {
        try {
          // Only the jobs that get a handler slot at once spend their attempt now. A free
          // slot means an empty buffer (dispatch fills slots first), and no job enters the
          // buffer while this claim is out, so these slots are still free when it returns.
          const startNow = Math.max(0, Math.min(free, this.#concurrency - this.#running.size - this.#buffer.length));
          const nudges = this.#nudges;
          const jobs = await this.#claim(free, startNow);
          this.#claimFailures = 0;
          const since = this.#clock.now();
          for (const job of jobs) this.#buffer.push({ job, since });
          if (this.#state !== "running") break; // released by stop()
          this.#dispatch();
          // A short batch is not an empty queue: SKIP LOCKED passes over rows other
          // workers are claiming. Only an empty claim means wait for a notification.
          // A notification that arrived while this claim was out may be for a job its
          // snapshot could not see: only a claim that began after it can say the queue is empty.
          if (jobs.length > 0) continue;
          if (this.#nudges === nudges) this.#queueMayHaveJobs = false;
        } catch (error) {
          this.#emit({ type: "error", during: "claim", error });
          const delay = Math.min(10_000, 100 * 2 ** this.#claimFailures++);
          await this.#wake.wait(delay);
          continue;
        }
      }
      const woken = await this.#wake.wait(this.#pollIntervalMs);
      if (!woken) this.#queueMayHaveJobs = true;
    }
  }

  /**
   * The fixed prefetch, or the adaptive one: about a quarter second of this worker's
   * recent throughput, at least `concurrency` while jobs are finishing and at most 1000.
   * No-op-fast jobs are claimed a thousand per statement; a worker whose handlers have
   * finished nothing in the last quarter to half second (all busy with slow jobs, or just
   * started) claims no more than it can start, so it does not hoard jobs from other workers.
   */
  #prefetchNow(): number {
    if (this.#prefetch !== undefined) return this.#prefetch;
    this.#rollWindow();
    const recent = Math.max(this.#finishedNow, this.#finishedBefore);
    return Math.min(1000, recent === 0 ? 0 : Math.max(this.#concurrency, recent));
  }

  #rollWindow(): void {
    const now = this.#clock.now();
    if (now - this.#windowStart < 250) return;
    this.#finishedBefore = now - this.#windowStart < 500 ? this.#finishedNow : 0;
    this.#finishedNow = 0;
    this.#windowStart = now;
  }

  /** A notification (or rescue) says jobs may be ready. */
  #nudge(): void {
    this.#nudges++;
    this.#queueMayHaveJobs = true;
    this.#wake.wake();
  }

  /** Claims up to `limit` jobs, of which the first `startNow` are charged their attempt at once. */
  async #claim(limit: number, startNow: number): Promise<ClaimedJob[]> {
    const sentAt = this.#clock.now();
    const { rows } = await this.#driver.run<ClaimRow>(this.#queries.claim, [limit, this.id, this.#leases, this.#leaseMs, startNow]);
    const started: ClaimedJob[] = [];
    const reserved: ClaimedJob[] = [];
    for (const row of rows) {
      const id = String(row.id);
      let retry: RetryPolicy | null = null;
      let undecodable: Error | undefined;
      if (row.retry !== null) {
        try {
          retry = decodeRetryPolicy(row.retry, this.#policyFor(row.kind));
        } catch (error) {
          // This job fails alone (see #run); the rest of the batch runs.
          undecodable = new ErrandError("invalid_job", `job ${id} cannot run: its retry column is not a retry policy (${describeError(error)})`, { cause: error });
        }
      }
      const job: ClaimedJob = {
        id,
        kind: row.kind,
        payload: row.payload,
        attempt: row.started ? Number(row.attempts) : Number(row.attempts) + 1,
        maxAttempts: Number(row.max_attempts),
        retry,
        runAt: new Date(Number(row.run_at_ms)),
        createdAt: new Date(Number(row.created_at_ms)),
      };
      if (undecodable) this.#undecodable.set(job, undecodable);
      if (row.started) started.push(job);
      else {
        this.#reserved.add(job);
        reserved.push(job);
      }
    }
    // Started jobs first: they are the ones with a slot waiting (see #claimLoop).
    const jobs = started.length === 0 ? reserved : started.concat(reserved);
    this.#local.claimed(jobs, sentAt);
    return jobs;
  }

  #dispatch(): void {
    while (this.#running.size < this.#concurrency && this.#buffer.length > 0 && this.#state === "running") {
      void this.#run(this.#buffer.shift()!.job);
    }
  }

  /** Runs one claimed job and queues its outcome. Never rejects. */
  async #run(job: ClaimedJob): Promise<void> {
    const entry: Running = { job, controller: new LazyAbort(), discard: false, expired: false };
    this.#running.set(job, entry);
    const started = this.#clock.now();
    try {
      const undecodable = this.#undecodable.get(job);
      this.#undecodable.delete(job);
      // A reserved job starts now, without a round trip first (that is what the buffer
      // saves); its start is written with the next batch, if its outcome does not get there first.
      if (this.#reserved.delete(job) && !undecodable) this.#completer.started(job);
      const outcome: Outcome = undecodable
        ? { type: "failed", error: describeError(undecodable), permanent: true, delayMs: 0 }
        : await execute(job, this.#handlers, entry.controller, this.#policyFor(job.kind));
      if (entry.discard) this.#completer.forget(job);
      else if (!(entry.expired && outcome.type !== "done")) {
        this.#completer.add(job, outcome);
        this.#report(job, outcome, this.#clock.now() - started);
      }
    } catch (error) {
      // execute() never throws; this keeps a bug from leaving the job's slot taken forever.
      this.#emit({ type: "error", during: "run", error });
    } finally {
      this.#running.delete(job);
      this.#local.forget(job);
      if (this.#prefetch === undefined) {
        this.#rollWindow();
        this.#finishedNow++;
      }
      this.#dispatch();
      // Running: a slot is free, claim more. Stopping: stop() waits for exactly this.
      this.#wake.wake();
    }
  }

  /** Gives back buffered jobs that waited longer than {@link maxBufferWaitMs} (adaptive prefetch). */
  #releaseStale(): void {
    const before = this.#clock.now() - maxBufferWaitMs;
    if (this.#buffer.length === 0 || this.#buffer[0]!.since > before) return;
    const stale = this.#buffer.filter((b) => b.since <= before);
    this.#buffer.splice(0, this.#buffer.length, ...this.#buffer.filter((b) => b.since > before));
    for (const { job } of stale) {
      this.#forgetBuffered(job);
      this.#completer.add(job, { type: "released" });
    }
  }

  /** Drops a job taken out of the buffer from the worker's bookkeeping. */
  #forgetBuffered(job: ClaimedJob): void {
    this.#local.forget(job);
    this.#reserved.delete(job);
    this.#undecodable.delete(job);
  }

  #policyFor(kind: string): RetryPolicy {
    return this.#kinds.get(kind)?.retry ?? defaultRetryPolicy;
  }

  #report(job: ClaimedJob, outcome: Outcome, durationMs: number): void {
    if (outcome.type === "done") this.#emit({ type: "job_done", job, durationMs });
    else if (outcome.type === "snoozed") this.#emit({ type: "job_snoozed", job, delayMs: outcome.delayMs });
    else if (outcome.permanent || job.attempt >= job.maxAttempts) this.#emit({ type: "job_dead", job, durationMs, error: outcome.error });
    else this.#emit({ type: "job_failed", job, durationMs, error: outcome.error, retryInMs: outcome.delayMs });
  }

  /** Extends the leases of every job this worker holds; aborts handlers whose lease is gone. */
  async #heartbeat(): Promise<void> {
    const held = [...this.#running.keys(), ...this.#buffer.map((b) => b.job), ...this.#completer.jobs()];
    if (held.length === 0) return;
    const sentAt = this.#clock.now();
    let kept: Set<string>;
    try {
      const ids = held.map((j) => j.id);
      const attempts = byId(ids, held.map((j) => j.attempt));
      const { rows } = await this.#driver.run<{ id: string; attempts: number }>(this.#queries.heartbeat, [ids, attempts, this.id, this.#leases, this.#leaseMs]);
      kept = new Set(rows.map((row) => `${row.id}/${row.attempts}`));
    } catch (error) {
      this.#emit({ type: "error", during: "heartbeat", error });
      return;
    }
    const extended = held.filter((job) => kept.has(`${job.id}/${job.attempt}`));
    this.#local.extended(extended, sentAt);
    if (extended.length === held.length) return;
    const lost = held.filter((job) => !kept.has(`${job.id}/${job.attempt}`));
    this.#drop(lost, (job) => new ErrandError("lease_lost", `the lease on job ${job.id} was lost; another worker may run it`), true);
  }

  /**
   * Heartbeats have not extended these leases in time (the database is slow or out of
   * reach): stop their handlers before the leases run out and another worker takes over.
   */
  #abortExpired(): void {
    const expiring = this.#local.takeExpiring(this.#clock.now(), this.#leaseCheckMs * 2);
    if (expiring.length === 0) return;
    this.#drop(expiring, (job) => new ErrandError("lease_expired", `the lease on job ${job.id} could not be extended in time; another worker may run it`), false);
  }

  /** Aborts the running `jobs` and forgets the buffered ones; `lost` = the database said so. */
  #drop(jobs: readonly ClaimedJob[], reason: (job: ClaimedJob) => ErrandError, lost: boolean): void {
    const dropped: string[] = [];
    for (const job of jobs) {
      const running = this.#running.get(job);
      if (running) {
        if (lost) running.discard = true;
        else running.expired = true;
        running.controller.abort(reason(job));
        dropped.push(job.id);
      }
      const buffered = this.#buffer.findIndex((b) => b.job === job);
      if (buffered >= 0) {
        this.#buffer.splice(buffered, 1);
        this.#forgetBuffered(job);
        dropped.push(job.id);
      }
    }
    if (dropped.length) this.#emit({ type: "lease_lost", jobIds: dropped });
  }

  async #stop(timeout: number): Promise<void> {
    if (this.#state === "stopped") return;
    const deadline = this.#clock.now() + timeout;
    this.#state = "stopping";
    this.#wake.wake();
    await this.#loop;
    await this.#unlisten?.().catch(() => {});
    // Claimed but never started: give them back now so other workers can take them.
    const unstarted = this.#buffer.splice(0).map((b) => b.job);
    for (const job of unstarted) {
      this.#forgetBuffered(job);
      this.#completer.add(job, { type: "released" });
    }
    while (this.#running.size > 0 && this.#clock.now() < deadline) {
      await this.#wake.wait(Math.max(1, deadline - this.#clock.now()));
    }
    let released = unstarted.length;
    for (const running of this.#running.values()) {
      if (running.discard) continue; // no longer ours: nothing to give back
      running.discard = true;
      running.controller.abort(new ErrandError("shutdown", "the worker is shutting down; the job will run again"));
      this.#completer.add(running.job, { type: "released" });
      released++;
    }
    this.#running.clear();
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
    // Outcomes that cannot be written (the database is down) are retried for what is left
    // of the timeout, and at least 3 s, then given up: those jobs run again after their
    // lease (see docs/crash-safety.md). This bounds shutdown at about timeout + 3 s.
    await this.#completer.drain(Math.max(deadline, this.#clock.now() + 3_000), () => this.#clock.now());
    this.#state = "stopped";
    this.#emit({ type: "stopped", workerId: this.id, released });
    this.#finishStop();
  }

  #finishStop(): void {
    for (const fn of this.#stoppedCallbacks.splice(0)) fn();
  }

  #every(ms: number, fn: () => Promise<void>): void {
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      // Each fn reports its own errors through onEvent; this only keeps a bug from
      // becoming an unhandled rejection, and clears the flag.
      Promise.resolve()
        .then(fn)
        .catch((error: unknown) => this.#emit({ type: "error", during: "timer", error }))
        .finally(() => {
          busy = false;
        });
    }, ms);
    this.#timers.push(timer);
  }

  #emit(event: WorkerEvent): void {
    try {
      this.#onEvent(event);
    } catch {
      // a logging hook must not break the worker
    }
  }
}
