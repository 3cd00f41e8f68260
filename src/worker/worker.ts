import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { type Clock, monotonicClock } from "../clock.js";
import { ErrandError } from "../errors.js";
import type { Driver } from "../driver/types.js";
import { type RescueResult, Rescuer } from "../maintenance/rescuer.js";
import type { ResolvedKind } from "../options.js";
import { busyBeforeQuietMs, defaultRetryPolicy, noticesBeforeQuiet, pausePollMs, restingPollMs } from "../defaults.js";
import { queriesFor } from "../sql/jobs.js";
import { pauseNotice } from "../sql/queues.js";
import { keyedNotice } from "../sql/limits.js";
import { cancelNotice, channelFor, insertedSince, returnedNotice } from "../sql/statement.js";
import { Completer } from "./completer.js";
import { Heartbeat } from "./heartbeat.js";
import { maxBufferWaitMs } from "./buffer.js";
import { LocalLeases } from "./leases.js";
import { WorkerPauses } from "./pauses.js";
import { ProgressWriter } from "./progress.js";
import { KeyedClaim } from "./keyed-claim.js";
import { WorkerPresence } from "./presence.js";
import { Waiting } from "./waiting.js";
import { Producer } from "./producer.js";
import type { ClaimedJob } from "./executor.js";
import { type WorkerEvent, type WorkerOptions, type WorkerSettings, resolveWorkerOptions } from "./worker-options.js";

export type { WorkerEvent, WorkerOptions } from "./worker-options.js";

/**
 * Claims jobs in batches with `FOR UPDATE SKIP LOCKED`, runs up to `concurrency`
 * handlers, writes outcomes in batches, keeps leases alive with a heartbeat and
 * rescues expired leases. Create one with `errand.worker(options)`.
 *
 * It composes its parts and runs their timers: a {@link Producer} per queue it serves
 * (claim loop, prefetch, buffer, running handlers), the {@link Heartbeat}, the
 * {@link Completer}, a {@link Rescuer} and its view of the paused queues and kinds.
 */
export class Worker {
  /** This worker's id, as written to `locked_by`. */
  readonly id: string;
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #settings: WorkerSettings;
  readonly #onEvent: (event: WorkerEvent) => void;
  readonly #clock: Clock;
  readonly #completer: Completer;
  readonly #progress: ProgressWriter;
  /** One per queue served: the default worker has one. */
  readonly #producers: readonly Producer[];
  readonly #pauses: WorkerPauses;
  readonly #presence: WorkerPresence;
  readonly #waiting: Waiting;
  /** Insert notices heard since the timer last looked (see #quietWhenBusy). */
  #insertNotices = 0;
  readonly #heartbeat: Heartbeat;
  readonly #rescuer: Rescuer;
  readonly #stoppedCallbacks: (() => void)[] = [];
  #state: "idle" | "running" | "stopping" | "stopped" = "idle";
  #stopping: Promise<void> | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #timers: NodeJS.Timeout[] = [];
  /** When the pauses were last read (clock): a listening worker reads them again only every restingPollMs. */
  #pausesReadAt = -Infinity;

  /** Prefer `errand.worker(options)`. `clock` times buffers, leases and durations (tests pass their own). */
  constructor(driver: Driver, schema: string, kinds: ReadonlyMap<string, ResolvedKind>, options: WorkerOptions, clock: Clock = monotonicClock) {
    const settings = resolveWorkerOptions(options, kinds);
    this.#driver = driver;
    this.#schema = schema;
    this.#settings = settings;
    this.#clock = clock;
    this.#onEvent = options.onEvent ?? (() => {});
    this.id = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    const queries = queriesFor(schema);
    const emit = (event: WorkerEvent) => this.#emit(event);
    this.#completer = new Completer(driver, queries, this.id, settings.flushDelayMs, (error) => emit({ type: "error", during: "complete", error }), clock);
    this.#completer.onLost = (ids) => emit({ type: "lease_lost", jobIds: ids });
    const leases = new LocalLeases((kind) => kinds.get(kind)?.leaseMs ?? settings.leaseMs);
    const policyFor = (kind: string) => kinds.get(kind)?.retry ?? defaultRetryPolicy;
    const timeoutFor = (kind: string) => kinds.get(kind)?.timeoutMs;
    const common = { driver, schema, queries, workerId: this.id, settings, leases, clock, emit };
    this.#progress = new ProgressWriter(driver, queries, this.id, settings.progressIntervalMs, (error) => emit({ type: "error", during: "progress", error }), clock);
    // The worker claims only kinds it has a handler for (see QueueGate).
    this.#pauses = new WorkerPauses(driver, schema, Object.keys(options.handlers));
    this.#presence = new WorkerPresence(driver, schema, this.id, [...settings.queues.keys()], Object.keys(options.handlers), clock);
    const lookAgain = () => {
      for (const producer of this.#producers) producer.lookAgain();
    };
    const waiting = new Waiting(driver, schema, this.#presence, settings.pollIntervalMs, lookAgain, (error) => emit({ type: "error", during: "presence", error }));
    this.#waiting = waiting;
    const producers = [...settings.queues].map(
      ([queue, concurrency]) =>
        new Producer({
          ...common,
          queue,
          concurrency,
          gate: this.#pauses.gate(queue),
          handlers: options.handlers,
          policyFor,
          timeoutFor,
          completer: this.#completer,
          progress: this.#progress,
          keyed: new KeyedClaim(driver, schema, clock, settings.pollIntervalMs),
          rested: () => waiting.rest(),
          trusted: () => this.#presence.trusts(clock.now()),
          rebirths: () => this.#presence.rebirths,
        }),
    );
    this.#producers = producers;
    const completer = this.#completer;
    this.#presence.onRecreated = () => this.#reservedInDoubt();
    this.#heartbeat = new Heartbeat({
      ...common,
      jobs: {
        held: () => [...producers.flatMap((producer) => producer.held()), ...completer.jobs()],
        drop: (jobs, reason, lost) => producers.flatMap((producer) => producer.drop(jobs, reason, lost)),
        cancel: (jobs) => producers.flatMap((producer) => producer.cancel(jobs)),
        completedInTransaction: (job) => completer.isCompletedInTransaction(job),
      },
    });
    this.#rescuer = new Rescuer(driver, schema, {
      ...(settings.rescueIntervalMs > 0 ? { intervalMs: settings.rescueIntervalMs } : {}),
      onRescue: (result) => this.#rescued(result),
      onError: (error) => emit({ type: "error", during: "rescue", error }),
    }, false);
  }

  /** Jobs whose handlers are running now. */
  get activeCount(): number {
    let active = 0;
    for (const producer of this.#producers) active += producer.activeCount;
    return active;
  }

  /** Starts listening, claiming and running jobs. Resolves once it is listening. */
  async start(): Promise<void> {
    if (this.#state !== "idle") throw new ErrandError("worker_state", `worker is ${this.#state}; create a new one to start again`);
    this.#state = "running";
    try {
      this.#unlisten = await this.#driver.listen(
        channelFor(this.#schema),
        (payload) => {
          // A job of this worker's may have been cancelled: the heartbeat reports which, so
          // send it now (a missed notice costs only time: the next heartbeat reports it).
          if (payload === cancelNotice) void this.#heartbeat.beat();
          else if (payload === pauseNotice) void this.#readPauses();
          else {
            if (payload !== keyedNotice && payload !== returnedNotice) this.#insertNotices++;
            this.#nudge(payload === keyedNotice, payload === returnedNotice, insertedSince(payload));
          }
        },
        () => {
          // Notifications sent while the connection was down are lost: look for jobs and pauses now.
          this.#emit({ type: "listen_restored" });
          void this.#readPauses();
          this.#nudge(true, true);
        },
      );
      // Notifications wake it: at rest it polls rarely (see Producer.listening).
      for (const producer of this.#producers) producer.listening();
    } catch (error) {
      // Polling still works without notifications.
      this.#emit({ type: "error", during: "listen", error });
    }
    // Before the first claim: a paused queue or kind stays paused for a new worker too.
    await this.#readPauses();
    if (this.#state !== "running") {
      // stop() was called while we were connecting; it could not see the listener yet.
      await this.#unlisten?.().catch(() => {});
      return;
    }
    const settings = this.#settings;
    await this.#waiting.started(await this.#refreshPresence());
    this.#every(pausePollMs, () => {
      this.#quietWhenBusy();
      return Promise.all([this.#pollPauses(), this.#refreshPresence()]).then(() => {});
    });
    this.#every(settings.heartbeatIntervalMs, () => this.#heartbeat.beat());
    this.#every(pausePollMs, () => {
      this.#stopUnconfirmedStarts();
      return Promise.resolve();
    });
    this.#every(settings.leaseCheckMs, () => {
      this.#heartbeat.checkLeases();
      for (const producer of this.#producers) producer.sweep();
      return Promise.resolve();
    });
    if (settings.prefetch === undefined) {
      this.#every(maxBufferWaitMs / 4, () => {
        for (const producer of this.#producers) producer.releaseStale();
        return Promise.resolve();
      });
    }
    // A worker restarted after a crash rescues its predecessor's jobs without waiting a full interval.
    if (settings.rescueIntervalMs > 0) void this.#rescuer.start();
    for (const producer of this.#producers) producer.start();
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
    this.#stopping ??= this.#stop(options.timeout ?? this.#settings.shutdownTimeoutMs);
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
    await this.#readPauses();
    let ran = 0;
    for (const producer of this.#producers) ran += await producer.runOnce();
    await this.#completer.flush();
    return ran;
  }

  /**
   * Returns expired leases to `ready` (or `dead` on their last attempt). Safe to run
   * from many workers at once. Returns how many jobs were rescued and buried.
   */
  async rescue(): Promise<{ ready: number; dead: number }> {
    try {
      const result = await this.#rescuer.runOnce();
      this.#rescued(result);
      return result;
    } catch (error) {
      this.#emit({ type: "error", during: "rescue", error });
      return { ready: 0, dead: 0 };
    }
  }

  #rescued({ ready, dead }: RescueResult): void {
    if (ready + dead === 0) return;
    this.#emit({ type: "rescued", ready, dead });
    // Rescued jobs may be keyed ones, and a rescue sends no keyed notice. Their run_at is the
    // rescue's now(), which a claim that ran while the rescue was in flight may have passed:
    // the claim floors drop (returned).
    if (ready) this.#nudge(true, true);
  }

  /** `keyed`: jobs with a concurrency key may be among those to look for (see KeyedClaim); `returned` and `since`: see Producer.nudge. */
  #nudge(keyed: boolean, returned = false, since?: number): void {
    for (const producer of this.#producers) producer.nudge(keyed, returned, since);
  }

  /**
   * The pauses' poll: every pausePollMs without notifications; with them, every
   * restingPollMs, as a pause or resume notifies (and a reconnect reads them at once).
   */
  async #pollPauses(): Promise<void> {
    if (this.#unlisten !== undefined && this.#clock.now() - this.#pausesReadAt < restingPollMs) return;
    await this.#readPauses();
  }

  /** Reads the paused queues and kinds; when they changed, each producer gives back what is paused now. */
  async #readPauses(): Promise<void> {
    this.#pausesReadAt = this.#clock.now();
    try {
      if (await this.#pauses.refresh()) for (const producer of this.#producers) producer.pausesChanged();
    } catch (error) {
      this.#emit({ type: "error", during: "pauses", error });
    }
  }

  /** Writes this worker's row in the registry of live workers when due (see presence.ts); resolves false when the write failed. */
  async #refreshPresence(): Promise<boolean> {
    const trusted = this.#presence.trusts(this.#clock.now());
    return await this.#presence.refresh().then(
      (revived) => {
        if (revived) this.#waiting.revived();
        if (!trusted && this.#presence.trusts(this.#clock.now())) for (const producer of this.#producers) producer.trustRestored();
        return true;
      },
      (error: unknown) => {
        this.#emit({ type: "error", during: "presence", error });
        return false;
      },
    );
  }

  /**
   * A write of this worker's row found it born again (see presence.ts): a rescuer may have
   * returned the jobs this worker held reserved. It gives back the ones it buffered (a job a
   * rescuer returned is not written) and stops the handlers of those it started whose start
   * the database has not recorded (a success is still written where the lease holds).
   */
  #reservedInDoubt(): void {
    let released = 0;
    for (const producer of this.#producers) released += producer.releaseBuffered();
    const stopped = this.#stopStarts(this.#completer.unconfirmedStarts());
    const error = new ErrandError(
      "lease_lost",
      `this worker's row in ${this.#schema}.workers went unwritten for a minute, and a rescuer may have returned the jobs it held reserved: it gave back the ${released} it had buffered and stopped ${stopped} it had started`,
    );
    this.#emit({ type: "error", during: "presence", error });
  }

  /**
   * The worker's row has not been written for 50 s (reservedTrustMs): the handlers of the
   * jobs it started from the buffer whose start the database has not recorded are stopped
   * before a rescuer may return those jobs as never started (see presence.ts).
   */
  #stopUnconfirmedStarts(): void {
    if (this.#presence.trusts(this.#clock.now())) return;
    this.#stopStarts(this.#completer.unconfirmedStarts());
  }

  /** Aborts the handlers of `jobs` as with an expiring lease; returns how many ran. */
  #stopStarts(jobs: readonly ClaimedJob[]): number {
    if (jobs.length === 0) return 0;
    for (const job of jobs) this.#completer.forget(job);
    const reason = (job: ClaimedJob) =>
      new ErrandError("lease_expired", `job ${job.id} started from the buffer, and neither its start nor this worker's row could be written in time; another worker may run it`);
    const dropped = this.#producers.flatMap((producer) => producer.drop(jobs, reason, false));
    if (dropped.length) this.#emit({ type: "lease_lost", jobIds: dropped });
    return dropped.length;
  }

  /**
   * Every producer has kept finding jobs for {@link busyBeforeQuietMs}, and inserts notified
   * at least {@link noticesBeforeQuiet} times since the last look (a second): the worker
   * stops waiting for notices (see waiting.ts).
   */
  #quietWhenBusy(): void {
    const heard = this.#insertNotices;
    this.#insertNotices = 0;
    // Only while inserts notify often: a quiet spell costs the claims that follow its end.
    if (heard < noticesBeforeQuiet) return;
    const since = this.#clock.now() - busyBeforeQuietMs;
    if (this.#producers.every((producer) => producer.quietSince(since))) this.#waiting.quiet();
  }

  async #stop(timeout: number): Promise<void> {
    if (this.#state === "stopped") return;
    const deadline = this.#clock.now() + timeout;
    this.#state = "stopping";
    await Promise.all(this.#producers.map((producer) => producer.stopClaiming()));
    this.#waiting.stop();
    await this.#unlisten?.().catch(() => {});
    // Claimed but never started: give them back now so other workers can take them.
    let released = 0;
    for (const producer of this.#producers) released += producer.releaseBuffered();
    await Promise.all(this.#producers.map((producer) => producer.settle(deadline)));
    for (const producer of this.#producers) released += producer.abortRunning();
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
    // Not awaited: a rescue in flight must not hold up shutdown (it reports its own errors).
    void this.#rescuer.stop();
    // Outcomes that cannot be written (the database is down) are retried for what is left
    // of the timeout, and at least 3 s, then given up: those jobs run again after their
    // lease (see docs/crash-safety.md). This bounds shutdown at about timeout + 3 s.
    await this.#completer.drain(Math.max(deadline, this.#clock.now() + 3_000), () => this.#clock.now());
    // Every handler has ended; progress of the finished jobs went with their outcomes.
    this.#progress.stop();
    await this.#presence.leave().catch((error: unknown) => this.#emit({ type: "error", during: "presence", error }));
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
