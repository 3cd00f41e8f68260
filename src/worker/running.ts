import type { Clock } from "../clock.js";
import { abortGraceMs, defaultTimeoutMs } from "../defaults.js";
import { ErrandError } from "../errors.js";
import { type RetryPolicy, retryDelay } from "../retry-policy.js";
import type { Driver } from "../driver/types.js";
import type { Queries } from "../sql/jobs.js";
import type { Completer } from "./completer.js";
import { type ClaimedJob, type Outcome, type ResultHandling, describeError, execute } from "./executor.js";
import type { Handlers } from "./handlers.js";
import { LazyAbort } from "./lazy-abort.js";
import { HandlerWrites } from "./run-writes.js";
import type { ProgressWriter } from "./progress.js";
import type { WorkerEvent } from "./worker-options.js";

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
  /** When the handler started, on the clock: {@link RunningJobs.sweep} times the default maximum run time from it. */
  readonly started: number;
  /** The timer of a job whose own or kind's maximum run time is set (the default is swept instead). */
  timer: NodeJS.Timeout | undefined;
  /** Set when the handler was stopped for good: how the attempt ends, whatever the handler does next. */
  stopped: { readonly type: "timeout"; readonly ms: number } | { readonly type: "cancelled" } | undefined;
  /** Set when the handler did not settle within the grace after `stopped`: its slot is free and its result ignored. */
  abandoned: boolean;
}

/** What {@link RunningJobs} works with. */
export interface RunningParts {
  readonly handlers: Handlers;
  readonly policyFor: (kind: string) => RetryPolicy;
  /** The kind's maximum run time in ms, if it sets one. */
  readonly timeoutFor: (kind: string) => number | undefined;
  readonly completer: Completer;
  /** For the writes a handler makes through its context (checkpoint, complete). */
  readonly driver: Driver;
  readonly queries: Queries;
  readonly workerId: string;
  readonly progress: ProgressWriter;
  readonly settings: { readonly maxResultBytes: number };
  readonly clock: Clock;
  readonly emit: (event: WorkerEvent) => void;
  /** Called after each run ends, whatever its outcome: a handler slot is free. */
  readonly onFinished: (job: ClaimedJob) => void;
}

/**
 * The jobs whose handlers are running, keyed by the claim (a job rescued and claimed again
 * is another claim): runs each one through the executor, queues its outcome with the
 * completer and reports it, or drops it when the job is no longer this worker's.
 */
export class RunningJobs {
  readonly #handlers: Handlers;
  readonly #policyFor: (kind: string) => RetryPolicy;
  readonly #timeoutFor: (kind: string) => number | undefined;
  readonly #completer: Completer;
  readonly #writes: HandlerWrites;
  readonly #progress: ProgressWriter;
  readonly #results: ResultHandling;
  readonly #clock: Clock;
  readonly #emit: (event: WorkerEvent) => void;
  readonly #onFinished: (job: ClaimedJob) => void;
  readonly #running = new Map<ClaimedJob, Running>();

  constructor(parts: RunningParts) {
    this.#handlers = parts.handlers;
    this.#policyFor = parts.policyFor;
    this.#timeoutFor = parts.timeoutFor;
    this.#completer = parts.completer;
    this.#writes = new HandlerWrites(parts.driver, parts.queries, parts.workerId, parts.completer);
    this.#progress = parts.progress;
    const progress = parts.progress;
    this.#results = { maxResultBytes: parts.settings.maxResultBytes, progress: (job, json) => progress.report(job, json) };
    this.#clock = parts.clock;
    this.#emit = parts.emit;
    this.#onFinished = parts.onFinished;
  }

  /** Handlers running now. */
  get size(): number {
    return this.#running.size;
  }

  /** The running jobs. */
  jobs(): IterableIterator<ClaimedJob> {
    return this.#running.keys();
  }

  /**
   * Runs one claimed job and queues its outcome. `undecodable`: the job fails with this
   * error instead of running. `reserved`: the claim did not spend its attempt, so its
   * start is recorded now. Never rejects.
   */
  async run(job: ClaimedJob, undecodable: Error | undefined, reserved: boolean): Promise<void> {
    const started = this.#clock.now();
    const entry: Running = { job, controller: new LazyAbort(), discard: false, expired: false, started, timer: undefined, stopped: undefined, abandoned: false };
    this.#running.set(job, entry);
    // Only a job with its own or its kind's maximum run time pays for a timer; the default
    // (long) one is checked by sweep() on the worker's lease-check timer.
    const timeout = job.timeoutMs ?? this.#timeoutFor(job.kind);
    if (timeout !== undefined) entry.timer = setTimeout(() => this.#stop(entry, { type: "timeout", ms: timeout }), timeout);
    try {
      // A reserved job starts now, without a round trip first (that is what the buffer
      // saves); its start is written with the next batch, if its outcome does not get there first.
      if (reserved && !undecodable) this.#completer.started(job);
      let outcome: Outcome = undecodable
        ? { type: "failed", error: describeError(undecodable), permanent: true, delayMs: 0 }
        : await execute(job, this.#handlers, entry.controller, this.#policyFor(job.kind), this.#writes, Math.random, this.#results);
      if (entry.abandoned) return; // already recorded at the end of the grace: this late result is ignored
      // The last progress not yet written goes with a completion; after any other outcome
      // the job is no longer running and the progress statement would skip it anyway.
      const progress = this.#progress.take(job);
      if (progress !== undefined && outcome.type === "done") outcome = { ...outcome, progress };
      if (entry.stopped) this.#settleStopped(entry);
      else if (entry.discard) this.#completer.forget(job);
      else if (!(entry.expired && outcome.type !== "done")) {
        this.#completer.add(job, outcome);
        this.#report(job, outcome, this.#clock.now() - started);
      }
    } catch (error) {
      // execute() never throws; this keeps a bug from leaving the job's slot taken forever.
      this.#emit({ type: "error", during: "run", error });
    } finally {
      if (entry.timer) clearTimeout(entry.timer);
      if (!entry.abandoned) {
        this.#running.delete(job);
        this.#onFinished(job);
      }
    }
  }

  /**
   * Times out the handlers that have run past the default maximum run time (those of jobs
   * whose kind and enqueue set none, so they have no timer of their own).
   */
  sweep(): void {
    const before = this.#clock.now() - defaultTimeoutMs;
    for (const entry of this.#running.values()) {
      if (!entry.timer && !entry.stopped && entry.started <= before) this.#stop(entry, { type: "timeout", ms: defaultTimeoutMs });
    }
  }

  /**
   * The job was cancelled (its row already says so): aborts its handler with a cancel
   * reason; nothing is written for it. Returns whether it was running.
   */
  cancel(job: ClaimedJob): boolean {
    const entry = this.#running.get(job);
    if (!entry) return false;
    this.#stop(entry, { type: "cancelled" });
    return true;
  }

  /**
   * Stops a handler for good (timed out or cancelled): fires its signal, and if it has not
   * settled {@link abortGraceMs} later, records how the attempt ended without it and frees
   * its slot; whatever it returns after that is ignored.
   */
  #stop(entry: Running, how: NonNullable<Running["stopped"]>): void {
    if (entry.stopped || entry.discard || this.#running.get(entry.job) !== entry) return;
    entry.stopped = how;
    const { job } = entry;
    entry.controller.abort(
      how.type === "timeout"
        ? new ErrandError("timeout", `job ${job.id} timed out after ${how.ms} ms`)
        : new ErrandError("cancelled", `job ${job.id} was cancelled`),
    );
    setTimeout(() => {
      if (this.#running.get(job) !== entry) return; // settled within the grace
      entry.abandoned = true;
      this.#running.delete(job);
      this.#settleStopped(entry);
      this.#onFinished(job);
    }, abortGraceMs).unref();
  }

  /** Queues and reports the end of a stopped handler's attempt. */
  #settleStopped(entry: Running): void {
    const { job, stopped } = entry;
    if (stopped?.type !== "timeout") {
      this.#completer.forget(job);
      return;
    }
    const error = `timed out after ${stopped.ms} ms`;
    const delayMs = retryDelay(job.attempt, job.retry ?? this.#policyFor(job.kind));
    this.#completer.add(job, { type: "timedOut", error, delayMs });
    this.#emit({ type: "job_timed_out", job, timeoutMs: stopped.ms });
    this.#report(job, { type: "failed", error, permanent: false, delayMs }, this.#clock.now() - entry.started);
  }

  /**
   * Aborts the job's handler with `reason`, if it is running. `lost` (the database said
   * so): its result is dropped; otherwise (its lease is about to run out) a success is
   * still written. Returns whether it was running.
   */
  abort(job: ClaimedJob, reason: (job: ClaimedJob) => ErrandError, lost: boolean): boolean {
    const running = this.#running.get(job);
    if (!running) return false;
    if (lost) running.discard = true;
    else running.expired = true;
    running.controller.abort(reason(job));
    return true;
  }

  /**
   * Aborts every handler still running at shutdown and gives its job back without
   * spending the attempt (late results are ignored); returns how many it gave back.
   */
  releaseAll(): number {
    let released = 0;
    for (const running of this.#running.values()) {
      if (running.discard) continue; // no longer ours: nothing to give back
      running.discard = true;
      running.controller.abort(new ErrandError("shutdown", "the worker is shutting down; the job will run again"));
      this.#completer.add(running.job, { type: "released" });
      released++;
    }
    this.#running.clear();
    return released;
  }

  #report(job: ClaimedJob, outcome: Outcome, durationMs: number): void {
    if (outcome.type === "done") this.#emit({ type: "job_done", job, durationMs });
    else if (outcome.type === "snoozed") this.#emit({ type: "job_snoozed", job, delayMs: outcome.delayMs });
    else if (outcome.permanent || job.attempt >= job.maxAttempts) this.#emit({ type: "job_dead", job, durationMs, error: outcome.error });
    else this.#emit({ type: "job_failed", job, durationMs, error: outcome.error, retryInMs: outcome.delayMs });
  }
}
