import type { Clock } from "../clock.js";
import type { ClaimRow } from "./claim.js";

/** A job's place in claim order (the ready index's key): priority descending, then run_at, then id. */
export interface ClaimKey {
  readonly priority: number;
  /** run_at in epoch microseconds: exact (the claim's float milliseconds carry them, see keyOf). */
  readonly runAtUs: number;
  readonly id: bigint;
}

/** Claims from the start take at most 1/this of the time, where they are slow (see ClaimFloor). */
export const fromStartShare = 20;
/** The longest the floor lives, in poll intervals, however slow a claim from the start is. */
export const maxPollIntervals = 10;

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
 * A job can become ready below the floor. Where the worker is told, it drops the floor
 * ({@link ClaimFloor.drop}): jobs given back by any worker (the release's `returned`
 * notice), rescued by this process, of a kind or queue just resumed. Where it is not — a
 * job enqueued with a run_at in the past or by a transaction that ran longer than the
 * claim's slack, rescued by another process (its run_at is the rescue's now(), below the
 * floor only when a claim passed that time while the rescue was in flight), a row another worker's claim skipped and
 * then rolled back — the job is not lost: the floor lives one poll interval after the last claim from the start, so the
 * first claim after that reads the whole index again. A job below the floor waits at most
 * that long for a worker with a free slot — the bound a missed notification already has —
 * and may run that much out of claim order. Where a claim from the start is slow (many
 * dead entries: 10,000,000 of them take a few hundred ms to read), the floor lives longer,
 * so that those claims take at most 1/{@link fromStartShare} of the time, up to
 * {@link maxPollIntervals} poll intervals.
 */
export class ClaimFloor {
  readonly #clock: Clock;
  readonly #pollIntervalMs: number;
  /** How long the floor lives after a claim from the start (see the class's comment). */
  #maxAgeMs: number;
  #key: ClaimKey | undefined;
  /** When the last claim from the start was sent (process clock). */
  #fromStartAt = -Infinity;
  /** Times the floor was dropped: a claim in flight at a drop may not have seen the jobs below. */
  #drops = 0;

  constructor(clock: Clock, pollIntervalMs: number) {
    this.#clock = clock;
    this.#pollIntervalMs = pollIntervalMs;
    this.#maxAgeMs = pollIntervalMs;
  }

  /** Where the next claim starts: from the floor's key, or from the start (no floor yet, it expired or was dropped). */
  start(): ClaimStart {
    const fresh = this.#clock.now() - this.#fromStartAt < this.#maxAgeMs;
    return { key: fresh ? this.#key : undefined, drops: this.#drops };
  }

  /** Records the rows of a claim that began at `start`, sent at `sentAt` (process clock): the floor moves past them. */
  claimed(rows: readonly ClaimRow[], start: ClaimStart, sentAt: number): void {
    if (start.drops !== this.#drops) return; // dropped meanwhile: the next claim starts from the start
    if (start.key === undefined) {
      this.#fromStartAt = sentAt;
      const tookMs = this.#clock.now() - sentAt;
      this.#maxAgeMs = Math.min(maxPollIntervals * this.#pollIntervalMs, Math.max(this.#pollIntervalMs, fromStartShare * tookMs));
    }
    // The last row in claim order, compared on the row's own values (run_at_ms orders as
    // run_at does: a microsecond is wider than its error); one key is made, for it alone.
    let last: ClaimRow | undefined;
    for (const row of rows) if (last === undefined || rowBefore(last, row)) last = row;
    const key = last === undefined ? undefined : keyOf(last);
    this.#key = key === undefined || (start.key !== undefined && before(key, start.key)) ? start.key : key;
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

/** Whether row `a` comes before row `b` in claim order. */
function rowBefore(a: ClaimRow, b: ClaimRow): boolean {
  if (a.priority !== b.priority) return Number(a.priority) > Number(b.priority);
  if (a.run_at_ms !== b.run_at_ms) return Number(a.run_at_ms) < Number(b.run_at_ms);
  const [x, y] = [String(a.id), String(b.id)]; // bigint ids as decimal text: shorter is smaller
  return x.length !== y.length ? x.length < y.length : x < y;
}

/** Whether `a` comes before `b` in claim order. */
export function before(a: ClaimKey, b: ClaimKey): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  if (a.runAtUs !== b.runAtUs) return a.runAtUs < b.runAtUs;
  return a.id < b.id;
}
