import type { Clock } from "../clock.js";
import type { Driver } from "../driver/types.js";
import { ErrandError } from "../errors.js";
import { type Queries, byId } from "../sql/jobs.js";
import type { ClaimedJob } from "./executor.js";
import type { LocalLeases } from "./leases.js";
import type { WorkerEvent, WorkerSettings } from "./worker-options.js";

/** What the heartbeat needs from the worker's jobs. */
export interface HeldJobs {
  /** Every job whose lease this worker keeps: running, buffered, and finished but not yet written. */
  held(): ClaimedJob[];
  /** Aborts the running `jobs` and forgets the buffered ones; `lost` = the database said so. Returns the ids it held. */
  drop(jobs: readonly ClaimedJob[], reason: (job: ClaimedJob) => ErrandError, lost: boolean): string[];
  /** Aborts the running `jobs`, cancelled in the database, and forgets the buffered ones. Returns the ids it held. */
  cancel(jobs: readonly ClaimedJob[]): string[];
  /** Whether the job's handler marked it done in its own transaction (its row is no longer leased, by design). */
  completedInTransaction(job: ClaimedJob): boolean;
}

/** What a {@link Heartbeat} works with. */
export interface HeartbeatParts {
  readonly driver: Driver;
  readonly queries: Queries;
  readonly workerId: string;
  readonly settings: Pick<WorkerSettings, "leaseMs" | "leasesByKind" | "leaseCheckMs">;
  readonly jobs: HeldJobs;
  readonly leases: LocalLeases;
  readonly clock: Clock;
  readonly emit: (event: WorkerEvent) => void;
}

/**
 * Keeps the worker's leases: {@link beat} extends every held lease in one statement and
 * stops the jobs the database no longer leases to this worker; {@link checkLeases} stops
 * handlers whose lease heartbeats could not extend in time, judged by the worker's own
 * conservative copy ({@link LocalLeases}), before another worker may take the job over.
 * The worker calls both on timers.
 */
export class Heartbeat {
  readonly #driver: Driver;
  readonly #queries: Queries;
  readonly #workerId: string;
  readonly #settings: HeartbeatParts["settings"];
  readonly #jobs: HeldJobs;
  readonly #local: LocalLeases;
  readonly #clock: Clock;
  readonly #emit: (event: WorkerEvent) => void;

  constructor(parts: HeartbeatParts) {
    this.#driver = parts.driver;
    this.#queries = parts.queries;
    this.#workerId = parts.workerId;
    this.#settings = parts.settings;
    this.#jobs = parts.jobs;
    this.#local = parts.leases;
    this.#clock = parts.clock;
    this.#emit = parts.emit;
  }

  /** Extends the leases of every job this worker holds; aborts handlers whose lease is gone. Never rejects. */
  async beat(): Promise<void> {
    const held = this.#jobs.held();
    const records = this.#local.records();
    if (held.length === 0 && records.length === 0) return;
    const sentAt = this.#clock.now();
    let kept: Set<string>;
    let cancelled: Set<string> | undefined;
    try {
      const ids = held.map((j) => j.id);
      const attempts = byId(ids, held.map((j) => j.attempt));
      const { leasesByKind, leaseMs } = this.#settings;
      const { rows } = await this.#driver.run<{ id: string; attempts: number; cancelled: boolean; lease: string | null }>(this.#queries.heartbeat, [
        ids,
        attempts,
        this.#workerId,
        leasesByKind,
        leaseMs,
        records,
      ]);
      const lease = rows.find((row) => row.lease !== null)?.lease;
      this.#local.recorded(records, lease === undefined || lease === null ? undefined : String(lease));
      kept = new Set();
      for (const row of rows) {
        if (row.cancelled) (cancelled ??= new Set()).add(`${row.id}/${row.attempts}`);
        else kept.add(`${row.id}/${row.attempts}`);
      }
    } catch (error) {
      this.#emit({ type: "error", during: "heartbeat", error });
      return;
    }
    // A job its handler completed in its own transaction is done, not lost: its handler
    // may finish (and its outcome be written, a no-op) without an abort or a lease_lost.
    const extended = held.filter((job) => kept.has(`${job.id}/${job.attempt}`) || this.#jobs.completedInTransaction(job));
    this.#local.extended(extended, sentAt);
    if (extended.length === held.length) return;
    if (cancelled) {
      const stop = held.filter((job) => cancelled.has(`${job.id}/${job.attempt}`));
      const ids = this.#jobs.cancel(stop);
      if (ids.length) this.#emit({ type: "jobs_cancelled", jobIds: ids });
    }
    const lost = held.filter((job) => !kept.has(`${job.id}/${job.attempt}`) && !cancelled?.has(`${job.id}/${job.attempt}`) && !this.#jobs.completedInTransaction(job));
    if (lost.length === 0) return;
    this.#drop(lost, (job) => new ErrandError("lease_lost", `the lease on job ${job.id} was lost; another worker may run it`), true);
  }

  /**
   * Heartbeats have not extended these leases in time (the database is slow or out of
   * reach): stop their handlers before the leases run out and another worker takes over.
   */
  checkLeases(): void {
    const margin = this.#settings.leaseCheckMs * 2;
    const expiring = this.#local.takeExpiring(this.#clock.now(), margin);
    if (expiring.length === 0) return;
    this.#drop(expiring, (job) => new ErrandError("lease_expired", `the lease on job ${job.id} could not be extended in time; another worker may run it`), false);
  }

  #drop(jobs: readonly ClaimedJob[], reason: (job: ClaimedJob) => ErrandError, lost: boolean): void {
    const dropped = this.#jobs.drop(jobs, reason, lost);
    if (dropped.length) this.#emit({ type: "lease_lost", jobIds: dropped });
  }
}
