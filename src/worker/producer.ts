import type { Clock } from "../clock.js";
import type { Driver } from "../driver/types.js";
import type { ErrandError } from "../errors.js";
import type { RetryPolicy } from "../retry-policy.js";
import type { Queries } from "../sql/jobs.js";
import { JobBuffer } from "./buffer.js";
import { Claimer } from "./claim.js";
import type { Completer } from "./completer.js";
import type { ClaimedJob } from "./executor.js";
import type { Handlers } from "./handlers.js";
import type { KeyedClaim } from "./keyed-claim.js";
import type { LocalLeases } from "./leases.js";
import { Prefetch } from "./prefetch.js";
import type { QueueGate } from "./pauses.js";
import type { ProgressWriter } from "./progress.js";
import { Rest } from "./rest.js";
import { RunningJobs } from "./running.js";
import type { WorkerEvent, WorkerSettings } from "./worker-options.js";
import { Wake } from "./wake.js";

/** What a {@link Producer} works with; the worker makes the shared parts. */
export interface ProducerParts {
  readonly driver: Driver;
  readonly schema: string;
  readonly queries: Queries;
  readonly workerId: string;
  /** The queue this producer claims from, and its handlers at once. */
  readonly queue: string;
  readonly concurrency: number;
  /** Which kinds it may claim and start now (see pauses.ts). */
  readonly gate: QueueGate;
  readonly handlers: Handlers;
  /** The retry policy of a kind (its own, else the default). */
  readonly policyFor: (kind: string) => RetryPolicy;
  /** A kind's maximum run time in ms, if it sets one. */
  readonly timeoutFor: (kind: string) => number | undefined;
  readonly settings: WorkerSettings;
  readonly completer: Completer;
  /** Writes the progress handlers report. */
  readonly progress: ProgressWriter;
  readonly leases: LocalLeases;
  readonly clock: Clock;
  readonly emit: (event: WorkerEvent) => void;
  /** Claims of jobs with a concurrency key (their limits and round-robin: keyed-claim.ts). */
  readonly keyed: KeyedClaim;
  /** The queue was found empty: the producer counts on notices now (see waiting.ts). */
  readonly rested: () => void;
  /** Whether the worker may start a job it holds reserved now (see presence.ts); while not, it claims none ahead. */
  readonly trusted: () => boolean;
  /** How many times the worker found its row born again (see presence.ts). */
  readonly rebirths: () => number;
}

/**
 * Claims one queue's jobs and runs them (a worker has one producer per queue it serves):
 * the claim loop, which decides when to claim and how many (woken by a notification, a
 * free slot or the poll; at rest it asks when the next job is due, see {@link Rest}), and
 * dispatch to free handler slots. It composes the claim statements ({@link Claimer}), the
 * prefetch (fixed, or adapted to recent throughput), the buffer of jobs claimed ahead
 * ({@link JobBuffer}) and the running handlers ({@link RunningJobs}): every job the worker
 * claimed is held here until its outcome is queued or it is given back.
 */
export class Producer {
  readonly #gate: QueueGate;
  readonly #settings: WorkerSettings;
  readonly #concurrency: number;
  readonly #prefetch: Prefetch;
  readonly #local: LocalLeases;
  readonly #clock: Clock;
  readonly #emit: (event: WorkerEvent) => void;
  readonly #keyed: KeyedClaim;
  readonly #wake = new Wake();
  readonly #claimer: Claimer;
  readonly #buffer: JobBuffer;
  readonly #running: RunningJobs;
  #claiming = false;
  #loop: Promise<void> | undefined;
  #queueMayHaveJobs = true;
  /** Notifications (and rescues) seen so far: one during an empty claim keeps the queue worth a look. */
  #nudges = 0;
  #claimFailures = 0;
  readonly #rest: Rest;
  /** When the queue was last found empty (clock): see {@link quietSince}. */
  #restedAt: number;
  readonly #rested: () => void;
  readonly #workerId: string;
  readonly #driver: Driver;
  /** The queue was found empty, and no claim since has come back full (see {@link Driver.refreshPlans}). */
  #emptied = false;
  /** Whether the queue had a limit at the last change of the pauses (see {@link pausesChanged}). */
  #limited = false;
  readonly #trusted: () => boolean;
  readonly #rebirths: () => number;

  constructor(parts: ProducerParts) {
    this.#settings = parts.settings;
    this.#gate = parts.gate;
    this.#concurrency = parts.concurrency;
    this.#prefetch = new Prefetch(parts.concurrency, parts.settings.prefetch, parts.clock);
    this.#local = parts.leases;
    this.#clock = parts.clock;
    this.#emit = parts.emit;
    this.#keyed = parts.keyed;
    this.#restedAt = parts.clock.now();
    this.#rested = parts.rested;
    this.#workerId = parts.workerId;
    this.#driver = parts.driver;
    this.#trusted = parts.trusted;
    this.#rebirths = parts.rebirths;
    this.#claimer = new Claimer({ ...parts, floorLowered: () => this.nudge() });
    this.#buffer = new JobBuffer(this.#claimer, parts.completer, parts.gate, parts.clock);
    this.#rest = new Rest(parts.driver, parts.schema, parts.queue, parts.clock, parts.settings.pollIntervalMs);
    parts.completer.onWritten((items) => {
      // A key has room, or a retry or snooze this worker wrote is due before the next look.
      if (this.#keyed.written(items) || this.#rest.written(items)) this.#wake.wake();
    });
    this.#running = new RunningJobs({ ...parts, onFinished: (job) => this.#finished(job) });
  }

  /** Jobs whose handlers are running now. */
  get activeCount(): number {
    return this.#running.size;
  }

  /**
   * Whether this producer can do without the insert trigger's notices (see waiting.ts): its
   * claims have kept finding jobs since `since` (clock), and its queue has no limit (whose
   * claims, all keyed, a plain notice wakes). errand's enqueues of keyed jobs send their
   * keyed notice either way.
   */
  quietSince(since: number): boolean {
    return this.#queueMayHaveJobs && this.#restedAt < since && !this.#gate.limited;
  }

  /** Starts the claim loop. */
  start(): void {
    this.#claiming = true;
    // The loop handles its own errors; this only makes sure a bug cannot become an unhandled rejection.
    this.#loop = this.#claimLoop().catch((error: unknown) => this.#emit({ type: "error", during: "claim", error }));
  }

  /** Stops claiming and dispatching; resolves once a claim in flight has returned (its jobs stay buffered). */
  async stopClaiming(): Promise<void> {
    this.#claiming = false;
    this.#wake.wake();
    await this.#loop;
    await this.#claimer.probed();
  }

  /** The worker listens for notifications: at rest, poll rarely (see {@link Rest}). */
  listening(): void {
    this.#rest.listening();
  }

  /**
   * A notification (or rescue) says jobs may be ready; `keyed`: jobs with a concurrency key
   * may be among them; `returned`: jobs came back to ready keeping their run_at, below the
   * claim floor (see claim-floor.ts), so the next claim sends the floor's probe; `since`: the
   * jobs were inserted by a transaction that began then (epoch µs, see insertedSince), so the
   * next claim starts no later than there.
   */
  nudge(keyed = false, returned = false, since?: number): void {
    if (returned) this.#claimer.dropFloor();
    if (since !== undefined) this.#claimer.lowerFloor(since);
    this.#keyed.wake(keyed);
    this.lookAgain();
  }

  /**
   * Plain jobs may be ready that no notice announced (see waiting.ts): the plain claim looks
   * again. The keyed claim keeps its own schedule, as for a plain SQL insert's keyed job.
   */
  lookAgain(): void {
    this.#nudges++;
    this.#queueMayHaveJobs = true;
    this.#wake.wake();
  }

  /** Claims one batch (up to `concurrency` jobs, all started, from the start of the ready index) and runs it; returns how many ran. */
  async runOnce(): Promise<number> {
    const keyed = await this.#claimer.claimKeyed(this.#concurrency);
    const rest = this.#gate.limited ? 0 : this.#concurrency - keyed.length;
    const jobs = rest > 0 ? keyed.concat(await this.#claimer.claim(rest, rest, true)) : keyed;
    await Promise.all(jobs.map((job) => this.#run(job)));
    return jobs.length;
  }

  /** Every job claimed and not yet finished: running, then buffered. */
  held(): ClaimedJob[] {
    return [...this.#running.jobs(), ...this.#buffer.jobs()];
  }

  /**
   * Lets go of jobs the worker no longer safely holds: aborts their handlers with `reason`
   * and takes them out of the buffer. `lost` (the database said so): a handler's result is
   * dropped; otherwise (the lease is about to run out) a success is still written. Returns
   * the ids of the jobs it held.
   */
  drop(jobs: readonly ClaimedJob[], reason: (job: ClaimedJob) => ErrandError, lost: boolean): string[] {
    const dropped: string[] = [];
    for (const job of jobs) {
      if (this.#running.abort(job, reason, lost)) dropped.push(job.id);
      if (this.#buffer.remove(job)) dropped.push(job.id);
    }
    return dropped;
  }

  /**
   * Lets go of jobs cancelled in the database: aborts their handlers with a cancel reason
   * (freeing the slot after a grace if a handler ignores it) and takes them out of the
   * buffer. Nothing is written for them. Returns the ids of the jobs it held.
   */
  cancel(jobs: readonly ClaimedJob[]): string[] {
    const cancelled: string[] = [];
    for (const job of jobs) {
      if (this.#running.cancel(job)) cancelled.push(job.id);
      if (this.#buffer.remove(job)) cancelled.push(job.id);
    }
    return cancelled;
  }

  /** Times out handlers past the default maximum run time (see RunningJobs.sweep). */
  sweep(): void {
    this.#running.sweep();
  }

  /** Gives back buffered jobs that waited longer than maxBufferWaitMs (adaptive prefetch; see {@link JobBuffer}). */
  releaseStale(): void {
    this.#buffer.releaseStale();
  }

  /**
   * Gives back the buffered jobs whose queue or kind is paused now, unspent (claimed,
   * never started): they wait, ready, for the resume. Handlers already running finish.
   */
  releasePaused(): void {
    this.#buffer.releasePaused();
  }

  /** The pauses or limits changed: gives back what is paused now, and looks for jobs (a resume may have freed some). */
  pausesChanged(): void {
    this.releasePaused();
    if (this.#gate.limited && !this.#limited) this.#limitArrived();
    this.#limited = this.#gate.limited;
    // A resumed kind's jobs wait below the claim floor (returned).
    this.nudge(true, true);
  }

  /** Gives back every buffered job (claimed, never started: at shutdown, or when a rescuer may have returned them); returns how many. */
  releaseBuffered(): number {
    return this.#buffer.releaseAll();
  }

  /** The worker may start reserved jobs again (see presence.ts): those waiting in the buffer start. */
  trustRestored(): void {
    this.#dispatch();
    this.#wake.wake();
  }

  /** Waits until no handler runs or the clock reaches `deadline`. */
  async settle(deadline: number): Promise<void> {
    while (this.#running.size > 0 && this.#clock.now() < deadline) {
      await this.#wake.wait(Math.max(1, deadline - this.#clock.now()));
    }
  }

  /**
   * Aborts the handlers still running at shutdown and gives their jobs back without
   * spending the attempt (their late results are ignored); returns how many it gave back.
   */
  abortRunning(): number {
    return this.#running.releaseAll();
  }

  /**
   * The queue gained a limit, which counts every running job of the queue: the buffered
   * jobs go back for the limited claim, and the running ones that plain claims started
   * (some perhaps after the limit was set) are counted against it. A plain claim still out
   * gives its jobs back when it returns (see the claim loop).
   */
  #limitArrived(): void {
    this.#buffer.releaseAll();
    this.#keyed.countRunning([...this.#running.jobs()], this.#workerId).catch((error: unknown) => this.#emit({ type: "error", during: "claim", error }));
  }

  async #claimLoop(): Promise<void> {
    const pollIntervalMs = this.#settings.pollIntervalMs;
    /** Jobs claimed since the loop last waited: a round that found none asks when one is due. */
    let claimedSinceWait = 0;
    while (this.#claiming) {
      const capacity = this.#concurrency + this.#prefetch.size();
      const refillAt = Math.max(1, Math.floor(capacity / 4));
      const free = capacity - this.#running.size - this.#buffer.length;
      const worthIt = free >= refillAt || (free > 0 && this.#buffer.length === 0);
      const keyedDue = this.#keyed.due();
      if ((this.#queueMayHaveJobs || keyedDue) && worthIt && this.#gate.claimable.length > 0) {
        try {
          // Only the jobs that get a handler slot at once spend their attempt now. A free
          // slot means an empty buffer (dispatch fills slots first), and no job enters the
          // buffer while this claim is out, so these slots are still free when it returns.
          let startNow = Math.max(0, Math.min(free, this.#concurrency - this.#running.size - this.#buffer.length));
          const nudges = this.#nudges;
          const rebirths = this.#rebirths();
          // Keyed jobs (concurrency keys) first, for free slots only: see keyed-claim.ts.
          const keyedLooked = keyedDue && startNow > 0;
          const keyed = keyedDue ? await this.#claimer.claimKeyed(startNow) : [];
          const keyedFull = keyedLooked && keyed.length === startNow;
          startNow -= keyed.length;
          // While keyed jobs may be waiting, claim no plain jobs ahead: a full buffer would keep them from the slots.
          // A queue with a limit claims all its jobs through the keyed path (claim_limited).
          // Nor while the worker may not start reserved jobs (see presence.ts).
          const plainLimit = this.#gate.limited ? 0 : this.#keyed.due() || !this.#trusted() ? startNow : free - keyed.length;
          const plainLooked = this.#queueMayHaveJobs && plainLimit > 0;
          const plain = plainLooked ? await this.#claimer.claim(plainLimit, startNow) : [];
          const jobs = keyed.length === 0 ? plain : keyed.concat(plain);
          this.#claimFailures = 0;
          // A backlog where the queue was empty: the statements' plans (the keyed claim
          // functions' too) may have been made for a table of a few pages, and read it whole
          // now (see planLifetimeMs in src/driver/pg.ts).
          if (this.#emptied && (keyedFull || (plainLooked && plain.length === plainLimit))) {
            this.#emptied = false;
            this.#driver.refreshPlans?.();
          }
          claimedSinceWait += jobs.length;
          this.#buffer.push(jobs, this.#clock.now());
          if (!this.#claiming) break; // released by the worker's stop()
          // A pause that arrived while this claim was out: its jobs go back unstarted.
          if (!this.#gate.open) this.releasePaused();
          // So do a plain claim's, when a limit arrived while it was out: the limited claim
          // (which counts them against the limit) takes them again.
          if (plain.length > 0 && this.#gate.limited) this.#buffer.releaseJobs(plain);
          // And what it reserved, when the worker found its row born again while it was out:
          // a rescuer may have returned those rows after this claim took them (see presence.ts).
          if (this.#rebirths() !== rebirths) this.#buffer.releaseJobs(plain.filter((job) => this.#claimer.isReserved(job)));
          this.#dispatch();
          // A short batch is not an empty queue: SKIP LOCKED passes over rows other
          // workers are claiming. Only an empty claim means wait for a notification.
          // A notification that arrived while this claim was out may be for a job its
          // snapshot could not see: only a claim that began after it can say the queue is empty.
          if (jobs.length > 0) {
            this.#rest.claimed();
            continue;
          }
          // A round that made no claim (a keyed claim due, and no slot free for it) found
          // nothing out: it waits for a slot below.
          if (this.#nudges === nudges && (keyedLooked || plainLooked)) {
            this.#queueMayHaveJobs = false;
            this.#emptied = true;
            this.#restedAt = this.#clock.now();
            this.#rested();
            this.#rest.emptied(claimedSinceWait > 0);
          }
        } catch (error) {
          this.#emit({ type: "error", during: "claim", error });
          const delay = Math.min(10_000, 100 * 2 ** this.#claimFailures++);
          await this.#wake.wait(delay);
          continue;
        }
      }
      const slotFree = this.#running.size + this.#buffer.length < this.#concurrency;
      if (slotFree && this.#resting()) {
        const askAt = this.#rest.askAt;
        if (this.#clock.now() >= askAt) await this.#askWhenDue();
        else {
          // A keyed claim made due by a plain notification (see KeyedClaim.wake) is the claim's to make, not an ask's.
          await this.#wake.wait(Math.max(1, Math.min(askAt - this.#clock.now(), this.#keyed.msUntilDue())));
          claimedSinceWait = 0;
        }
        continue;
      }
      // A rate limit says when its next job may start: sleep until then (a free slot or a notification wakes sooner).
      const keyedWait = slotFree ? this.#keyed.msUntilDue() : Infinity;
      const woken = await this.#wake.wait(Math.max(1, Math.min(pollIntervalMs, keyedWait)));
      claimedSinceWait = 0;
      if (!woken && keyedWait >= pollIntervalMs) {
        this.#queueMayHaveJobs = true;
        this.#keyed.wake(true);
      }
    }
  }

  /**
   * At rest: no job ready now that a claim could take, and no keyed job held back by a limit
   * (those are polled for: another worker's outcome frees their key without a notification).
   */
  #resting(): boolean {
    return !this.#queueMayHaveJobs && this.#keyed.idle && !this.#gate.limited && this.#gate.claimable.length > 0;
  }

  /** Asks when this queue's next job is due (see {@link Rest}), and claims what is due now. */
  async #askWhenDue(): Promise<void> {
    try {
      const due = await this.#rest.ask(this.#gate.claimable);
      this.#claimFailures = 0;
      if (due.plain) this.#queueMayHaveJobs = true;
      if (due.keyed) this.#keyed.wake(true);
    } catch (error) {
      this.#emit({ type: "error", during: "claim", error });
      this.#rest.retryIn(Math.min(10_000, 100 * 2 ** this.#claimFailures++));
    }
  }

  /**
   * Starts buffered jobs in free slots, oldest first. A job the claim only reserved waits
   * while the worker may not start one (see presence.ts): {@link trustRestored} starts it.
   */
  #dispatch(): void {
    while (this.#running.size < this.#concurrency && this.#buffer.length > 0 && this.#claiming) {
      if (this.#claimer.isReserved(this.#buffer.peek()!) && !this.#trusted()) return;
      void this.#run(this.#buffer.shift()!);
    }
  }

  /** Runs one claimed job and queues its outcome. Never rejects. */
  #run(job: ClaimedJob): Promise<void> {
    return this.#running.run(job, this.#claimer.takeError(job), this.#claimer.takeReserved(job));
  }

  /** A handler slot is free. */
  #finished(job: ClaimedJob): void {
    this.#local.forget(job);
    this.#prefetch.finished();
    this.#dispatch();
    // Claiming: a slot is free, claim more. Shutting down: settle() waits for exactly this.
    this.#wake.wake();
  }
}
