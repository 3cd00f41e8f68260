import type { Clock } from "../clock.js";
import type { Driver } from "../driver/types.js";
import type { RetryPolicy } from "../retry-policy.js";
import { limitQueriesFor } from "../sql/limits.js";
import { type ClaimRow, type DecodedClaim, decodeClaimRow } from "./claim.js";
import type { ClaimedJob } from "./executor.js";

/** A row of claim_keyed: a job, or (id null) the closing row with the cursor and the wait. */
interface KeyedRow extends Omit<ClaimRow, "id"> {
  id: string | number | null;
  concurrency_key: string | null;
  wait_ms: number | null;
}

/**
 * The worker's side of keyed jobs (jobs with a concurrency key, claimed by `claim_keyed`):
 * when a keyed claim is worth its round trip, and where this worker's round-robin over
 * keys resumes. Keyed jobs are claimed only for free handler slots and start at once: a
 * keyed job waiting in the buffer would hold its key's slot without running.
 *
 * A claim that finds nothing (every key at its limit, or no keyed jobs at all) stops the
 * keyed claims until something may have changed: a notification, one of this worker's
 * keyed jobs' outcome written (its key has room), the poll, or the moment a rate limit lets the
 * next job start (the claim says when). So the common case, no keys, costs one empty
 * claim per notification, and a job held back by a rate is not polled for.
 */
export class KeyedClaim {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #clock: Clock;
  /** When the next keyed claim is worth making (process clock); Infinity: not until woken. */
  #dueAt = 0;
  /** The last key visited: the next claim starts after it. */
  #after: string | null = null;
  /** Wake-ups seen: one during a claim that found nothing keeps the next claim due. */
  #wakes = 0;
  /** Keyed jobs this worker claimed whose outcome is not written yet. */
  readonly #mine = new WeakSet<ClaimedJob>();
  #held = 0;

  constructor(driver: Driver, schema: string, clock: Clock) {
    this.#driver = driver;
    this.#schema = schema;
    this.#clock = clock;
  }

  /** Whether a keyed claim is worth making now. */
  due(): boolean {
    return this.#clock.now() >= this.#dueAt;
  }

  /** Milliseconds until a keyed claim is due (Infinity: only a wake-up makes it due). */
  msUntilDue(): number {
    return Math.max(0, this.#dueAt - this.#clock.now());
  }

  /** Keyed jobs may be claimable: a notification, the poll, or a key got room. */
  wake(): void {
    this.#wakes++;
    this.#dueAt = 0;
  }

  /**
   * Outcomes were written: if one was a keyed job's, its key has room now (not before: until
   * its outcome is written the job counts as running). Returns whether a keyed claim is due.
   */
  written(items: readonly { readonly job: ClaimedJob }[]): boolean {
    if (this.#held === 0) return false;
    let mine = false;
    for (const { job } of items) {
      if (this.#mine.delete(job)) {
        this.#held--;
        mine = true;
      }
    }
    if (mine) this.wake();
    return mine;
  }

  /**
   * Claims up to `slots` keyed jobs of `queue` and `kinds`, all started; decoded as the plain
   * claim's rows are. In a queue with a concurrency limit (`limited`), every job of the queue
   * is claimed here (claim_limited): like a keyed job, it must not wait in a buffer holding a
   * place, and the outcome of one frees a place, so it wakes the next claim the same way.
   */
  async claim(
    slots: number,
    worker: string,
    leasesByKind: string,
    leaseMs: number,
    policyFor: (kind: string) => RetryPolicy,
    queue: string,
    kinds: readonly string[],
    limited: boolean,
  ): Promise<DecodedClaim[]> {
    if (slots <= 0 || kinds.length === 0) return [];
    const wakes = this.#wakes;
    // The wait counts from the claim's own clock reading, which is after this: due from the
    // send, the next claim is at most a round trip early (and then told the rest) instead of late.
    const sentAt = this.#clock.now();
    const { rows } = await this.#driver.run<KeyedRow>((limited ? limitQueriesFor(this.#schema).claimLimited : limitQueriesFor(this.#schema).claimKeyed), [slots, worker, leasesByKind, leaseMs, this.#after, queue, kinds]);
    const claimed: DecodedClaim[] = [];
    let waitMs: number | null = null;
    for (const row of rows) {
      if (row.id === null) {
        this.#after = row.concurrency_key;
        waitMs = row.wait_ms === null ? null : Number(row.wait_ms);
        continue;
      }
      const decoded = decodeClaimRow(row as ClaimRow, policyFor);
      this.#mine.add(decoded.job);
      this.#held++;
      claimed.push(decoded);
    }
    if (claimed.length === slots) this.#dueAt = 0;
    else if (this.#wakes === wakes) this.#dueAt = waitMs === null ? (claimed.length > 0 ? 0 : Infinity) : sentAt + waitMs;
    return claimed;
  }
}
