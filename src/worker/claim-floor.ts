import type { Clock } from "../clock.js";
import type { ClaimRow } from "./claim.js";

/** A job's place in claim order (the ready index's key): priority descending, then run_at, then id. */
export interface ClaimKey {
  readonly priority: number;
  /** run_at in epoch microseconds: exact (the claim's float milliseconds carry them, see keyOf). */
  readonly runAtUs: number;
  readonly id: bigint;
}

/** What a claim started from: the floor's key (undefined: from the start), and the drops before it. */
export interface ClaimStart {
  readonly key: ClaimKey | undefined;
  readonly drops: number;
}

/**
 * Where a producer's next claim starts in the ready index (see `claimFrom` in
 * src/sql/jobs.ts): after the last job it claimed, so it does not read again the dead
 * index entries that every claimed job leaves in front of it until VACUUM removes them.
 *
 * A job can become ready below the floor: a reserved job given back (by another worker:
 * this one drops its floor when it gives jobs back or its pauses change), a rescued job,
 * one enqueued with a run_at in the past or by a transaction that ran longer than the
 * claim's slack, a row another worker's claim skipped and then rolled back. Such a job is
 * not lost: the floor lives `maxAgeMs` (the worker's poll interval) after the last claim
 * from the start, so the first claim after that reads the whole index again. A job below
 * the floor waits at most that long for a worker with a free slot — the bound a missed
 * notification already has — and may run that much out of claim order.
 */
export class ClaimFloor {
  readonly #clock: Clock;
  readonly #maxAgeMs: number;
  #key: ClaimKey | undefined;
  /** When the last claim from the start was sent (process clock). */
  #fromStartAt = -Infinity;
  /** Times the floor was dropped: a claim in flight at a drop may not have seen the jobs below. */
  #drops = 0;

  constructor(clock: Clock, maxAgeMs: number) {
    this.#clock = clock;
    this.#maxAgeMs = maxAgeMs;
  }

  /** Where the next claim starts: from the floor's key, or from the start (no floor yet, it expired or was dropped). */
  start(): ClaimStart {
    const fresh = this.#clock.now() - this.#fromStartAt < this.#maxAgeMs;
    return { key: fresh ? this.#key : undefined, drops: this.#drops };
  }

  /** Records the rows of a claim that began at `start`, sent at `sentAt` (process clock): the floor moves past them. */
  claimed(rows: readonly ClaimRow[], start: ClaimStart, sentAt: number): void {
    if (start.drops !== this.#drops) return; // dropped meanwhile: the next claim starts from the start
    let key = start.key;
    if (key === undefined) this.#fromStartAt = sentAt;
    for (const row of rows) {
      const next = keyOf(row);
      if (key === undefined || before(key, next)) key = next;
    }
    this.#key = key;
  }

  /** Jobs are ready below the floor (given back, rescued, resumed): the next claim starts from the start. */
  drop(): void {
    this.#key = undefined;
    this.#drops++;
  }
}

/** The claim key of a claimed row. */
export function keyOf(row: ClaimRow): ClaimKey {
  // run_at_ms is a float8 of about 1.8e12 with three decimals: its error (under 0.13 µs)
  // is below half a microsecond even after the multiplication, so rounding recovers run_at.
  return { priority: Number(row.priority), runAtUs: Math.round(Number(row.run_at_ms) * 1000), id: BigInt(row.id) };
}

/** Whether `a` comes before `b` in claim order. */
export function before(a: ClaimKey, b: ClaimKey): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  if (a.runAtUs !== b.runAtUs) return a.runAtUs < b.runAtUs;
  return a.id < b.id;
}
