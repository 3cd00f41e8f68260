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
  /** On the closing row: whether the queue has any ready keyed job (see claimKeyed in src/sql/limits.ts). */
  keyed_ready?: boolean | null;
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
 * next job start (the claim says when). A job held back by a rate is not polled for.
 *
 * When the queue has no ready keyed job at all (the claim's closing row says so), plain
 * notifications no longer make a keyed claim due: the common case, no keys, costs nothing
 * per notification. A keyed notice (errand's enqueue and batch calls send one after
 * inserting keyed jobs), one of this worker's keyed outcomes, or the poll make it due
 * again; a plain notification does once the poll interval has gone by since that claim
 * (at the end of the interval if it came earlier). So a keyed job that came without a
 * keyed notice (inserted by plain SQL, retried from dead, rescued) waits at most about a
 * poll interval.
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
  /** The last claim found no ready keyed job in the queue: a plain wake-up makes the next one due only from {@link #recheckAt}. */
  #none = false;
  #recheckAt = 0;
  readonly #recheckMs: number;

  /** `recheckMs`: longest a keyed claim waits after one that found no keyed job at all (the poll interval). */
  constructor(driver: Driver, schema: string, clock: Clock, recheckMs: number) {
    this.#driver = driver;
    this.#schema = schema;
    this.#clock = clock;
    this.#recheckMs = recheckMs;
  }

  /** Whether a keyed claim is worth making now. */
  due(): boolean {
    return this.#clock.now() >= this.#dueAt;
  }

  /**
   * The last claim found no ready keyed job in the queue, and no keyed notice came since
   * (a plain notification may have made a claim due at the end of the recheck interval).
   */
  get idle(): boolean {
    return this.#none;
  }

  /** Milliseconds until a keyed claim is due (Infinity: only a wake-up makes it due). */
  msUntilDue(): number {
    return Math.max(0, this.#dueAt - this.#clock.now());
  }

  /**
   * Keyed jobs may be claimable: a notification, the poll, or a key got room. A plain
   * notification (`keyed` false) is ignored while the queue is known to hold no keyed job.
   */
  wake(keyed: boolean): void {
    this.#wakes++;
    // A plain notification within the recheck interval: looked into at its end, not now.
    // (Not due before: a due keyed claim keeps the plain claim from claiming ahead.)
    if (this.#none && !keyed && this.#clock.now() < this.#recheckAt) {
      this.#dueAt = this.#recheckAt;
      return;
    }
    this.#none = false;
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
    if (mine) this.wake(true);
    return mine;
  }

  /**
   * The queue gained a limit while `jobs` ran, started by plain claims: they count against
   * it (see countRunning in src/sql/limits.ts), and their outcomes free a place as those of
   * the jobs claimed here do.
   */
  async countRunning(jobs: readonly ClaimedJob[], worker: string): Promise<void> {
    const plain = jobs.filter((job) => !this.#mine.has(job));
    if (plain.length === 0) return;
    for (const job of plain) this.#mine.add(job);
    this.#held += plain.length;
    await this.#driver.run(limitQueriesFor(this.#schema).countRunning, [plain.map((job) => job.id), worker]);
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
    this.#none = false; // until this claim says so again: a wake-up meanwhile keeps the next one due
    // The wait counts from the claim's own clock reading, which is after this: due from the
    // send, the next claim is at most a round trip early (and then told the rest) instead of late.
    const sentAt = this.#clock.now();
    const { rows } = await this.#driver.run<KeyedRow>((limited ? limitQueriesFor(this.#schema).claimLimited : limitQueriesFor(this.#schema).claimKeyed), [slots, worker, leasesByKind, leaseMs, this.#after, queue, kinds]);
    const claimed: DecodedClaim[] = [];
    let waitMs: number | null = null;
    let none = false;
    for (const row of rows) {
      if (row.id === null) {
        this.#after = row.concurrency_key;
        waitMs = row.wait_ms === null ? null : Number(row.wait_ms);
        none = row.keyed_ready === false;
        continue;
      }
      const decoded = decodeClaimRow(row as ClaimRow, policyFor);
      this.#mine.add(decoded.job);
      this.#held++;
      claimed.push(decoded);
    }
    if (claimed.length === slots) this.#dueAt = 0;
    else if (this.#wakes !== wakes) return claimed; // woken meanwhile: stays due
    else if (claimed.length === 0 && none) {
      // Nothing keyed in the queue: skip keyed claims on plain notifications (see the class comment).
      this.#none = true;
      this.#recheckAt = sentAt + this.#recheckMs;
      this.#dueAt = Infinity;
    } else this.#dueAt = waitMs === null ? (claimed.length > 0 ? 0 : Infinity) : sentAt + waitMs;
    return claimed;
  }
}
