import { restingPollMs } from "../defaults.js";
import type { Driver } from "../driver/types.js";
import { workerQueriesFor } from "../sql/workers.js";
import type { WorkerPresence } from "./presence.js";

/**
 * Whether this worker waits for the insert trigger's notices, as its row in the registry
 * says (migration 025: the trigger notifies only while some row says so, since a notifying
 * commit queues behind a lock the whole server shares). A worker waits from its start and
 * whenever one of its producers finds its queue empty; it stops waiting once every producer
 * has kept finding jobs for a second while inserts kept notifying (the worker's timer calls
 * {@link quiet}): its claims go on without notices, and the inserts made meanwhile commit
 * without the lock.
 *
 * Coming back to waiting is where a job could be missed: a transaction whose trigger looked
 * before the row said "waiting" commits unannounced. So once the row says it, the worker
 * reads which transactions in flight have drawn a job id (an insert locks the jobs' id
 * sequence as it draws one, before its trigger looks, and keeps the lock to the end, so
 * every such transaction is among them or already committed), has its producers claim at
 * once, and again each time some of those end, until none is left: then every job
 * inserted unannounced is visible to a claim that came after. Transactions that insert no
 * job, of this schema or any other (claims and completions among them), are not waited
 * for; nor is a plain-SQL insert that gives its own id, whose job the poll finds. Such a job's run_at, its
 * transaction's start, lies below where the claims start only when that transaction ran
 * longer than the claim's slack and claims went past its start meanwhile: then the claim
 * floor's own probe finds it, at most a poll interval after its last (as it finds a plain
 * SQL job given a past run_at). The transactions waited for cost a look at their status,
 * first after 1 ms, then at doubling intervals up to the poll interval, and for at most the
 * resting poll (30 s), which covers whatever is left.
 * The same holds when the row had gone a minute without a refresh and stopped counting
 * (migration 027: the process stalled, or the database was out of reach), and the refresh
 * brings it back ({@link revived}).
 * That return costs a round of claims, so a worker stops waiting only while inserts
 * notify often (the worker's timer decides, see worker.ts), when the notices cost the
 * inserts something.
 *
 * When a write fails, the producers claim again after a poll interval and the next rest
 * tries again: until the row is written the worker does not count on notices.
 */
export class Waiting {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #presence: WorkerPresence;
  readonly #pollIntervalMs: number;
  /** Has the producers claim again. */
  readonly #nudge: () => void;
  readonly #onError: (error: unknown) => void;
  /** What the row says; undefined until written (or after a write failed). */
  #written: boolean | undefined;
  #wanted = true;
  #writing = false;
  /** Counts the changes to waiting: a look at the transactions in flight stops when a newer change makes it moot. */
  #changes = 0;
  #started = false;
  #stopped = false;
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(driver: Driver, schema: string, presence: WorkerPresence, pollIntervalMs: number, nudge: () => void, onError: (error: unknown) => void) {
    this.#driver = driver;
    this.#schema = schema;
    this.#presence = presence;
    this.#pollIntervalMs = pollIntervalMs;
    this.#nudge = nudge;
    this.#onError = onError;
  }

  /**
   * The worker wrote its row at start (`written`: the write succeeded; a new row waits).
   * Resolves once it has read the transactions in flight: its producers' first claims,
   * made after that, see whatever committed before, so no claim is needed at once, only
   * those as the transactions read end.
   */
  async started(written: boolean): Promise<void> {
    this.#started = true;
    if (!written) return this.#want(true);
    this.#written = true;
    const change = ++this.#changes;
    const xids = await this.#inFlight(change);
    if (xids) void this.#watch(change, xids);
  }

  /**
   * The worker's refresh found its row saying "waiting" after it had stopped counting for
   * the insert trigger (see WorkerPresence.refresh): claims as on coming back to waiting.
   * Before {@link started}, which does the same, nothing.
   */
  revived(): void {
    if (!this.#started || this.#stopped) return;
    void this.#afterWaiting(++this.#changes);
  }

  /** A producer found its queue empty: it counts on notices now. */
  rest(): void {
    this.#want(true);
  }

  /** Every producer has kept finding jobs for a while: no notices needed. */
  quiet(): void {
    this.#want(false);
  }

  /** The worker stops: no more writes (its row is deleted next). */
  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #want(waiting: boolean): void {
    this.#wanted = waiting;
    if (this.#written !== waiting && !this.#writing && !this.#stopped) void this.#write();
  }

  async #write(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#written !== this.#wanted && !this.#stopped) {
        const waiting = this.#wanted;
        this.#written = undefined;
        const change = ++this.#changes;
        try {
          await this.#presence.wait(waiting);
        } catch (error) {
          this.#onError(error);
          // The producers look again after a poll interval; their next rest tries again.
          this.#after(this.#pollIntervalMs, this.#nudge);
          return;
        }
        this.#written = waiting;
        if (waiting) void this.#afterWaiting(change);
      }
    } finally {
      this.#writing = false;
    }
  }

  /** The row says "waiting" since change `change`: claims at once (a transaction may have committed unannounced since the producers' last claims), and as those in flight end. */
  async #afterWaiting(change: number): Promise<void> {
    const xids = await this.#inFlight(change);
    if (!xids) return;
    this.#nudge();
    await this.#watch(change, xids);
  }

  /** The transactions in flight that have drawn a job id; undefined when a newer change made the look moot, or it failed (the producers then claim after a poll interval). */
  async #inFlight(change: number): Promise<string[] | undefined> {
    try {
      const { rows } = await this.#driver.run<{ xids: string[] }>(workerQueriesFor(this.#schema).inFlight, []);
      return this.#current(change) ? (rows[0]?.xids ?? []) : undefined;
    } catch (error) {
      this.#failed(change, error);
      return undefined;
    }
  }

  /** Claims each time some of `xids` end, until none is left, for at most the resting poll. */
  async #watch(change: number, xids: readonly string[]): Promise<void> {
    const { stillInFlight } = workerQueriesFor(this.#schema);
    try {
      let delay = 1;
      for (let waited = 0; xids.length > 0 && waited < restingPollMs; waited += delay, delay = Math.min(delay * 2, this.#pollIntervalMs)) {
        await new Promise<void>((resolve) => this.#after(delay, resolve));
        if (!this.#current(change)) return;
        const { rows } = await this.#driver.run<{ xids: string[] }>(stillInFlight, [xids]);
        const still = rows[0]?.xids ?? [];
        if (!this.#current(change)) return;
        if (still.length < xids.length) this.#nudge();
        xids = still;
      }
    } catch (error) {
      this.#failed(change, error);
    }
  }

  #current(change: number): boolean {
    return change === this.#changes && !this.#stopped;
  }

  /** Not knowing which transactions have ended: claim again after a poll interval, as a poll would. */
  #failed(change: number, error: unknown): void {
    this.#onError(error);
    this.#after(this.#pollIntervalMs, () => this.#current(change) && this.#nudge());
  }

  #after(ms: number, fn: () => unknown): void {
    if (this.#stopped) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms);
    this.#timers.add(timer);
  }
}
