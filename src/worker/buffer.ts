import type { Clock } from "../clock.js";
import type { Claimer } from "./claim.js";
import type { Completer } from "./completer.js";
import type { ClaimedJob } from "./executor.js";
import type { QueueGate } from "./pauses.js";

/**
 * Longest a job waits in an adaptive buffer before it is given back (unspent: it is only
 * reserved) for a worker with a free slot: jobs claimed ahead must not wait behind slow
 * ones. Fast jobs wait a fraction of this; a fixed `prefetch` keeps its jobs until a slot frees.
 */
export const maxBufferWaitMs = 1_000;

/** A claimed job waiting in the buffer for a free handler slot. */
interface Buffered {
  readonly job: ClaimedJob;
  /** When it was claimed (process clock). */
  readonly since: number;
}

/**
 * The jobs a producer claimed ahead (see prefetch.ts), oldest first, waiting for a free
 * handler slot; and their giving back, unstarted (released: the attempt is not spent),
 * when they waited past {@link maxBufferWaitMs}, when their queue or kind is paused, when
 * their queue gained a limit while their claim was out, or at shutdown. A job taken out of
 * the buffer is forgotten by the {@link Claimer} unless it goes to a handler slot.
 */
export class JobBuffer {
  readonly #entries: Buffered[] = [];
  readonly #claimer: Claimer;
  readonly #completer: Completer;
  readonly #gate: QueueGate;
  readonly #clock: Clock;

  constructor(claimer: Claimer, completer: Completer, gate: QueueGate, clock: Clock) {
    this.#claimer = claimer;
    this.#completer = completer;
    this.#gate = gate;
    this.#clock = clock;
  }

  /** Jobs waiting now. */
  get length(): number {
    return this.#entries.length;
  }

  /** Adds jobs claimed at `since` (process clock). */
  push(jobs: readonly ClaimedJob[], since: number): void {
    for (const job of jobs) this.#entries.push({ job, since });
  }

  /** The oldest job, left in. */
  peek(): ClaimedJob | undefined {
    return this.#entries[0]?.job;
  }

  /** Takes out the oldest job, for a free handler slot. */
  shift(): ClaimedJob | undefined {
    return this.#entries.shift()?.job;
  }

  /** The jobs waiting, oldest first. */
  jobs(): ClaimedJob[] {
    return this.#entries.map((b) => b.job);
  }

  /** Takes `job` out, if it waits here, and forgets it; nothing is written. Returns whether it waited here. */
  remove(job: ClaimedJob): boolean {
    const buffered = this.#entries.findIndex((b) => b.job === job);
    if (buffered < 0) return false;
    this.#entries.splice(buffered, 1);
    this.#claimer.forget(job);
    return true;
  }

  /** Gives back the jobs that waited longer than {@link maxBufferWaitMs} (adaptive prefetch). */
  releaseStale(): void {
    const before = this.#clock.now() - maxBufferWaitMs;
    if (this.#entries.length === 0 || this.#entries[0]!.since > before) return;
    const stale = this.#entries.filter((b) => b.since <= before);
    this.#entries.splice(0, this.#entries.length, ...this.#entries.filter((b) => b.since > before));
    this.#release(stale);
  }

  /** Gives back the jobs whose queue or kind is paused now: they wait, ready, for the resume. */
  releasePaused(): void {
    if (this.#gate.open || this.#entries.length === 0) return;
    this.#releaseWhere((job) => this.#gate.paused(job.kind));
  }

  /** Gives back those of `jobs` that wait here. */
  releaseJobs(jobs: readonly ClaimedJob[]): void {
    const given = new Set(jobs);
    this.#releaseWhere((job) => given.has(job));
  }

  /** Gives back every job (at shutdown); returns how many. */
  releaseAll(): number {
    const unstarted = this.#entries.splice(0);
    this.#release(unstarted);
    return unstarted.length;
  }

  #releaseWhere(match: (job: ClaimedJob) => boolean): void {
    const matched = this.#entries.filter((b) => match(b.job));
    if (matched.length === 0) return;
    this.#entries.splice(0, this.#entries.length, ...this.#entries.filter((b) => !match(b.job)));
    this.#release(matched);
  }

  #release(entries: readonly Buffered[]): void {
    for (const { job } of entries) {
      this.#claimer.forget(job);
      this.#completer.add(job, { type: "released" });
    }
  }
}
