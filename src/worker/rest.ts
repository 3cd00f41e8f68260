import type { Clock } from "../clock.js";
import { restingPollMs } from "../defaults.js";
import type { Driver } from "../driver/types.js";
import { queueQueriesFor } from "../sql/queues.js";
import type { Written } from "./completer.js";

/** What an ask found ready now: plain jobs, keyed jobs (either may be claimed at once). */
export interface DueNow {
  readonly plain: boolean;
  readonly keyed: boolean;
}

/**
 * When a {@link Producer} at rest looks at its queue again. At rest (nothing ready now,
 * no keyed job held back by a limit) it does not claim on every poll: it asks when the
 * next job is due (`nextDue`, one statement) and sleeps until then, until a notification,
 * or until the resting poll, whichever comes first. Every insert notifies; what becomes
 * due without one is covered here: jobs inserted for later (the ask's answer), this
 * worker's retries and snoozes (their delay is known when written), and anything else by
 * the poll: pollIntervalMs until the worker listens, then {@link restingPollMs}.
 */
export class Rest {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #queue: string;
  readonly #clock: Clock;
  readonly #pollIntervalMs: number;
  #restPollMs: number;
  /** When to ask next (process clock). */
  #askAt = 0;
  /** When the next job is due, as the last ask said (Infinity: none is ready). */
  #dueAt = Infinity;
  /** When the earliest retry or snooze this worker wrote since the last ask is due. */
  #retryAt = Infinity;
  /** The last ask found a job due now: if the claims that follow find none, it is locked, and the next ask waits a poll. */
  #askedDueNow = false;

  constructor(driver: Driver, schema: string, queue: string, clock: Clock, pollIntervalMs: number) {
    this.#driver = driver;
    this.#schema = schema;
    this.#queue = queue;
    this.#clock = clock;
    this.#pollIntervalMs = pollIntervalMs;
    this.#restPollMs = pollIntervalMs;
  }

  /** The worker listens for notifications: poll at rest every restingPollMs (or pollIntervalMs if longer). */
  listening(): void {
    this.#restPollMs = Math.max(this.#pollIntervalMs, restingPollMs);
  }

  /** When to ask next (process clock). */
  get askAt(): number {
    return Math.min(this.#askAt, this.#dueAt, this.#retryAt);
  }

  /** A claim found jobs. */
  claimed(): void {
    this.#askedDueNow = false;
  }

  /**
   * The claims found the queue empty. `foundAny`: this round (since the loop last waited)
   * found jobs before; if not, what woke it (a notification, the due time) may be about
   * a job due later, so ask now; if so, or when a job the last ask found due is locked,
   * ask after pollIntervalMs, as a poll would.
   */
  emptied(foundAny: boolean): void {
    this.#askAt = foundAny || this.#askedDueNow ? this.#clock.now() + this.#pollIntervalMs : 0;
    this.#askedDueNow = false;
  }

  /** Asks when the next job of `kinds` is due; rejects when the statement fails (see {@link retryIn}). */
  async ask(kinds: readonly string[]): Promise<DueNow> {
    const sentAt = this.#clock.now();
    const { rows } = await this.#driver.run<{ plain_ms: number | null; keyed_ms: number | null }>(queueQueriesFor(this.#schema).nextDue, [this.#queue, kinds]);
    const plainMs = rows[0]?.plain_ms ?? null;
    const keyedMs = rows[0]?.keyed_ms ?? null;
    this.#askAt = sentAt + this.#restPollMs;
    if (this.#retryAt <= sentAt) this.#retryAt = Infinity; // written before this ask: it saw them
    const now = (ms: number | null) => ms !== null && ms <= 0;
    const later = (ms: number | null) => (ms !== null && ms > 0 ? ms : Infinity);
    this.#dueAt = sentAt + Math.min(later(plainMs), later(keyedMs));
    const due = { plain: now(plainMs), keyed: now(keyedMs) };
    this.#askedDueNow = due.plain || due.keyed;
    return due;
  }

  /** An ask failed: ask again in `ms`. */
  retryIn(ms: number): void {
    this.#askAt = this.#clock.now() + ms;
  }

  /** Outcomes were written; returns true when a retry or snooze among them is due sooner than the next ask. */
  written(items: readonly { readonly outcome: Written }[]): boolean {
    let delayMs = Infinity;
    for (const { outcome } of items) {
      if (outcome.type === "timedOut" || outcome.type === "snoozed" || (outcome.type === "failed" && !outcome.permanent)) delayMs = Math.min(delayMs, outcome.delayMs);
    }
    const at = this.#clock.now() + delayMs;
    // Kept even when an ask is due sooner: an ask already on its way may not see these rows.
    const sooner = at < this.askAt;
    this.#retryAt = Math.min(this.#retryAt, at);
    return sooner;
  }
}
