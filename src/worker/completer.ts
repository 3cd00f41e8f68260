import type { Driver } from "../driver/types.js";
import { type Queries, byId } from "../sql/queries.js";
import type { ClaimedJob, Outcome } from "./executor.js";

interface Pending {
  readonly job: ClaimedJob;
  readonly outcome: Outcome | { readonly type: "released" };
}

/**
 * Writes job outcomes in batches: every outcome that arrives while a write is in flight
 * joins the next one, so a busy worker needs a few statements per batch instead of one
 * per job. A failed write is kept and retried with backoff, never dropped: a handler that
 * succeeded is not turned into a failure because its acknowledgement could not be written.
 */
export class Completer {
  readonly #driver: Driver;
  readonly #queries: Queries;
  readonly #workerId: string;
  readonly #flushDelayMs: number;
  readonly #onError: (error: unknown) => void;
  #pending: Pending[] = [];
  #flushing: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #failures = 0;
  /** Called with the job ids each write found no longer leased to this worker. */
  onLost: (ids: readonly string[]) => void = () => {};

  constructor(driver: Driver, queries: Queries, workerId: string, flushDelayMs: number, onError: (error: unknown) => void) {
    this.#driver = driver;
    this.#queries = queries;
    this.#workerId = workerId;
    this.#flushDelayMs = flushDelayMs;
    this.#onError = onError;
  }

  /** Outcomes not yet written. */
  get size(): number {
    return this.#pending.length;
  }

  /** The jobs whose outcome is waiting to be written (still `running` in the database). */
  jobs(): ClaimedJob[] {
    return this.#pending.map((p) => p.job);
  }

  /** Queues an outcome; it is written within a few milliseconds. */
  add(job: ClaimedJob, outcome: Pending["outcome"]): void {
    this.#pending.push({ job, outcome });
    this.#schedule(this.#failures === 0 ? this.#flushDelayMs : Math.min(5_000, 100 * 2 ** this.#failures));
  }

  /** Writes everything queued so far; rejects if the database cannot be reached. */
  async flush(): Promise<void> {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    while (this.#flushing) await this.#flushing.catch(() => {});
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#flushing = this.#write(batch).then((unwritten) => {
      if (unwritten.items.length === 0) {
        this.#failures = 0;
        return;
      }
      this.#pending = unwritten.items.concat(this.#pending);
      this.#failures++;
      throw unwritten.error;
    });
    try {
      await this.#flushing;
    } finally {
      this.#flushing = undefined;
    }
    if (this.#pending.length > 0) this.#schedule(this.#flushDelayMs);
  }

  /** Retries {@link flush} until everything is written or `deadline` (epoch ms) passes. */
  async drain(deadline: number, now: () => number): Promise<boolean> {
    for (;;) {
      try {
        await this.flush();
        if (this.#pending.length === 0) return true;
      } catch (error) {
        this.#onError(error);
        if (now() >= deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, Math.max(0, deadline - now()))));
      }
    }
  }

  #schedule(delayMs: number): void {
    if (this.#timer || this.#flushing) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flush().catch((error: unknown) => {
        this.#onError(error);
        this.#schedule(Math.min(5_000, 100 * 2 ** this.#failures));
      });
    }, delayMs);
  }

  /**
   * Writes each kind of outcome in statements of at most {@link maxRowsPerWrite} rows, all
   * at once; returns what could not be written.
   */
  async #write(batch: readonly Pending[]): Promise<{ items: Pending[]; error: unknown }> {
    const groups: [string, Pending[]][] = [];
    const open = new Map<string, Pending[]>();
    for (const item of batch) {
      const type = item.outcome.type === "snoozed" ? "released" : item.outcome.type;
      let group = open.get(type);
      if (!group || group.length >= maxRowsPerWrite) {
        group = [];
        open.set(type, group);
        groups.push([type, group]);
      }
      group.push(item);
    }
    const w = this.#workerId;
    const entries = groups;
    const results = await Promise.allSettled(
      entries.map(([type, items]) => {
        const id = ids(items);
        if (type === "done") return this.#driver.run<{ id: string }>(this.#queries.complete, [id, byId(id, attempts(items)), w]);
        if (type === "failed") {
          const values = items.map((p) => {
            const o = p.outcome as Extract<Outcome, { type: "failed" }>;
            return [p.job.attempt, o.delayMs, o.permanent, o.error] as const;
          });
          return this.#driver.run<{ id: string }>(this.#queries.fail, [id, byId(id, values), w]);
        }
        const values = items.map((p) => [p.job.attempt, p.outcome.type === "snoozed" ? p.outcome.delayMs : 0] as const);
        return this.#driver.run<{ id: string }>(this.#queries.release, [id, byId(id, values), w]);
      }),
    );
    const unwritten: Pending[] = [];
    let error: unknown;
    const lost: string[] = [];
    results.forEach((result, i) => {
      const items = entries[i]![1];
      if (result.status === "rejected") {
        unwritten.push(...items);
        error ??= result.reason;
        return;
      }
      const written = new Set(result.value.rows.map((row) => String(row.id)));
      for (const item of items) if (!written.has(item.job.id)) lost.push(item.job.id);
    });
    if (lost.length) this.onLost(lost);
    return { items: unwritten, error };
  }
}

/**
 * Most outcomes written by one statement. A backlog (outcomes that piled up during a slow
 * write) is split into several statements that run side by side, so no single write holds
 * its row locks (and delays heartbeats and other workers' rescues) for long. (A 10,000-row
 * update was once measured ~8× slower per row than 1,000-row ones: the statements joined
 * `unnest(...)` and their plan could turn quadratic — see `byId` in src/sql/queries.ts.)
 */
export const maxRowsPerWrite = 1000;

function ids(items: readonly Pending[]): string[] {
  return items.map((p) => p.job.id);
}

function attempts(items: readonly Pending[]): number[] {
  return items.map((p) => p.job.attempt);
}
