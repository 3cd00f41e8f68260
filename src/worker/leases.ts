import type { ClaimedJob } from "./executor.js";

/**
 * This worker's own, conservative idea of when each held lease ends, on the process
 * clock: a claim or heartbeat sent at `t` cannot have set `locked_until` earlier than
 * `t + lease`. The database stays the authority; this only lets a worker that cannot
 * reach it (heartbeats failing or hanging) stop its handlers before another worker may
 * take their jobs over, instead of after.
 */
export class LocalLeases {
  readonly #until = new Map<ClaimedJob, number>();
  readonly #leaseFor: (kind: string) => number;
  /** The ids of this worker's lease records in the database (migration 021) that its next heartbeat replaces. */
  readonly #records = new Set<string>();

  constructor(leaseFor: (kind: string) => number) {
    this.#leaseFor = leaseFor;
  }

  /** Records freshly claimed jobs; `sentAt` is when the claim statement was sent. */
  claimed(jobs: readonly ClaimedJob[], sentAt: number): void {
    for (const job of jobs) {
      this.#until.set(job, sentAt + this.#leaseFor(job.kind));
      if (job.lease !== undefined) this.#records.add(job.lease);
    }
  }

  /**
   * The lease records the next heartbeat replaces: every one this worker heard of, the
   * claims' and the last heartbeat's. A record left behind (a heartbeat that failed, a
   * worker that stopped) is harmless: the rescuer reads it when it is due, as it does a dead
   * worker's, and deletes it.
   */
  records(): string[] {
    return [...this.#records];
  }

  /** A heartbeat replaced `replaced` with the record `by` (undefined: none, it extended no lease). */
  recorded(replaced: readonly string[], by: string | undefined): void {
    for (const id of replaced) this.#records.delete(id);
    if (by !== undefined) this.#records.add(by);
  }

  /** Moves the deadline of the jobs a heartbeat (sent at `sentAt`) extended. */
  extended(jobs: Iterable<ClaimedJob>, sentAt: number): void {
    for (const job of jobs) if (this.#until.has(job)) this.#until.set(job, sentAt + this.#leaseFor(job.kind));
  }

  /** Stops tracking a job (its handler ended, or it was given back). */
  forget(job: ClaimedJob): void {
    this.#until.delete(job);
  }

  /** Jobs whose lease ends within `marginMs` of `now`, no longer tracked once returned. */
  takeExpiring(now: number, marginMs: number): ClaimedJob[] {
    const expiring: ClaimedJob[] = [];
    for (const [job, until] of this.#until) {
      if (until - now <= marginMs) {
        expiring.push(job);
        this.#until.delete(job);
      }
    }
    return expiring;
  }
}
