import { type Clock, monotonicClock } from "../clock.js";
import type { Driver } from "../driver/types.js";
import { ErrandError } from "../errors.js";
import { type Queries, byId, byIdJson } from "../sql/jobs.js";
import type { ClaimedJob, Outcome } from "./executor.js";

/** An attempt that ran past its maximum run time: written as a failure, counted as a timeout. */
export interface TimedOut {
  readonly type: "timedOut";
  readonly error: string;
  readonly delayMs: number;
}

/** What the completer writes for a job: its outcome, a timeout, a release, or (see `started`) its start. */
export type Written = Outcome | TimedOut | { readonly type: "released" } | { readonly type: "started" };

interface Pending {
  readonly job: ClaimedJob;
  readonly outcome: Written;
}

type WriteType = "done" | "failed" | "timedOut" | "released" | "started";

/** What writing one group of rows came to. */
interface GroupResult {
  /** Rows to try again later (the database could not be reached). */
  readonly unwritten: Pending[];
  /** Ids the write found no longer leased to this worker. */
  readonly lost: string[];
  readonly error?: unknown;
}

/**
 * Writes job outcomes in batches: every outcome that arrives while a write is in flight
 * joins the next one, so a busy worker needs a few statements per batch instead of one
 * per job. A failed write is kept and retried with backoff, never dropped: a handler that
 * succeeded is not turned into a failure because its acknowledgement could not be written.
 * One row that cannot be written cannot hold up the others: a write that fails on the data
 * of its rows is split until the row at fault is alone, and that one is buried (`dead`)
 * with the reason.
 */
export class Completer {
  readonly #driver: Driver;
  readonly #queries: Queries;
  readonly #workerId: string;
  readonly #flushDelayMs: number;
  readonly #onError: (error: unknown) => void;
  readonly #clock: Clock;
  #pending: Pending[] = [];
  /** Reserved jobs whose handlers started (when, on the clock) and whose outcome is not known yet. */
  readonly #starts = new Map<ClaimedJob, number>();
  /**
   * Reserved jobs whose handlers started, whose start no write has recorded yet and whose
   * outcome is not queued: to the database (and to a rescuer, should the worker's row go
   * stale) they are still only reserved. See {@link unconfirmedStarts}.
   */
  readonly #unconfirmed = new Set<ClaimedJob>();
  #flushing: Promise<void> | undefined;
  readonly #writtenListeners: ((items: readonly Pending[]) => void)[] = [];
  #timer: NodeJS.Timeout | undefined;
  #failures = 0;
  /**
   * Claims whose handler marked them done in its own transaction (ctx.complete). Their
   * outcome is still written, for when that transaction rolled back; when it committed,
   * the write finds the row done and that is not a lost lease.
   */
  readonly #inTransaction = new WeakSet<ClaimedJob>();
  /** Called with the job ids each write found no longer leased to this worker. */
  onLost: (ids: readonly string[]) => void = () => {};

  constructor(driver: Driver, queries: Queries, workerId: string, flushDelayMs: number, onError: (error: unknown) => void, clock: Clock = monotonicClock) {
    this.#clock = clock;
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

  /**
   * Records that a reserved job's handler started (its attempt is spent), with the first
   * batch written once it has run for `flushDelayMs`. Dropped if the job's outcome is
   * queued first, as it is for fast jobs: that write charges the attempt.
   */
  started(job: ClaimedJob): void {
    this.#starts.set(job, this.#clock.now());
    this.#unconfirmed.add(job);
    this.#schedule(this.#failures === 0 ? this.#flushDelayMs : Math.min(5_000, 100 * 2 ** this.#failures));
  }

  /** Records that `job`'s handler marked it done in its own transaction (ctx.complete, see run-writes.ts). */
  completedInTransaction(job: ClaimedJob): void {
    this.#inTransaction.add(job);
  }

  /** Whether `job`'s handler marked it done in its own transaction. */
  isCompletedInTransaction(job: ClaimedJob): boolean {
    return this.#inTransaction.has(job);
  }

  /** Forgets a job's unwritten start: the job is no longer this worker's, or its handler was told to stop. */
  forget(job: ClaimedJob): void {
    this.#starts.delete(job);
    this.#unconfirmed.delete(job);
  }

  /**
   * The jobs that started from the buffer and still run while the database holds them as
   * only reserved (their start not yet written): the ones a rescuer could return, should the
   * worker's row go stale (see presence.ts), while their handlers run on.
   */
  unconfirmedStarts(): ClaimedJob[] {
    return [...this.#unconfirmed];
  }

  /**
   * Calls `listener` with each batch of outcomes once it is written (keyed-claim.ts: their
   * keys have room; producer.ts: when the retries and snoozes among them are due).
   */
  onWritten(listener: (items: readonly { readonly job: ClaimedJob; readonly outcome: Written }[]) => void): void {
    this.#writtenListeners.push(listener);
  }

  /** Queues an outcome; it is written within a few milliseconds. */
  add(job: ClaimedJob, outcome: Exclude<Written, { type: "started" }>): void {
    this.#starts.delete(job);
    this.#unconfirmed.delete(job);
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
    const starts = this.#dueStarts();
    if (this.#pending.length === 0 && starts.length === 0) {
      if (this.#starts.size > 0) this.#schedule(this.#flushDelayMs);
      return;
    }
    const batch = this.#pending;
    this.#pending = [];
    this.#flushing = this.#write(batch, starts).then((unwritten) => {
      if (unwritten.items.length === 0) {
        this.#failures = 0;
        for (const listener of this.#writtenListeners) listener(batch);
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
    if (this.#pending.length > 0 || this.#starts.size > 0) this.#schedule(this.#flushDelayMs);
  }

  /** Takes the starts of handlers that have run for at least `flushDelayMs`. */
  #dueStarts(): ClaimedJob[] {
    if (this.#starts.size === 0) return [];
    const due: ClaimedJob[] = [];
    const before = this.#clock.now() - this.#flushDelayMs;
    for (const [job, at] of this.#starts) {
      if (at > before) continue;
      due.push(job);
      this.#starts.delete(job);
    }
    return due;
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
   * Writes each kind of outcome (and the starts) in statements of at most
   * {@link maxRowsPerWrite} rows, all at once; returns what could not be written.
   */
  async #write(batch: readonly Pending[], starts: readonly ClaimedJob[]): Promise<{ items: Pending[]; error: unknown }> {
    const groups: [WriteType, Pending[]][] = [];
    const open = new Map<WriteType, Pending[]>();
    const join = (type: WriteType, item: Pending) => {
      let group = open.get(type);
      if (!group || group.length >= maxRowsPerWrite) {
        group = [];
        open.set(type, group);
        groups.push([type, group]);
      }
      group.push(item);
    };
    for (const item of batch) join(item.outcome.type === "snoozed" ? "released" : item.outcome.type, item);
    for (const job of starts) join("started", { job, outcome: { type: "started" } });
    const results = await Promise.all(groups.map(([type, items]) => this.#writeGroup(type, items)));
    const unwritten = results.flatMap((r) => r.unwritten);
    const lost = results.flatMap((r) => r.lost);
    if (lost.length) this.onLost(lost);
    return { items: unwritten, error: results.find((r) => r.unwritten.length > 0)?.error };
  }

  /**
   * Writes one group. A failure caused by a row's data (see {@link isRowError}) splits the
   * group in halves, down to the row at fault, which is buried ({@link #deadLetter}).
   * Starts are written at most once: if that fails, the outcome's write charges the attempt.
   */
  async #writeGroup(type: WriteType, items: Pending[]): Promise<GroupResult> {
    try {
      const { rows } = await this.#statement(type, items);
      if (type === "started") {
        for (const item of items) this.#unconfirmed.delete(item.job);
        return { unwritten: [], lost: [] };
      }
      const written = new Set(rows.map((row) => String(row.id)));
      return { unwritten: [], lost: items.filter((item) => !written.has(item.job.id) && !this.#inTransaction.has(item.job)).map((item) => item.job.id) };
    } catch (error) {
      if (type === "started") {
        this.#onError(error);
        return { unwritten: [], lost: [] };
      }
      if (!isRowError(error)) return { unwritten: items, lost: [], error };
      if (items.length === 1) return this.#deadLetter(type, items[0]!, error);
      const half = Math.ceil(items.length / 2);
      const parts = await Promise.all([this.#writeGroup(type, items.slice(0, half)), this.#writeGroup(type, items.slice(half))]);
      return {
        unwritten: parts.flatMap((p) => p.unwritten),
        lost: parts.flatMap((p) => p.lost),
        error: parts.find((p) => p.unwritten.length > 0)?.error,
      };
    }
  }

  #statement(type: WriteType, items: readonly Pending[]): Promise<{ rows: { id: string }[] }> {
    const id = items.map((p) => p.job.id);
    const w = this.#workerId;
    if (type === "done" && items.some((p) => hasValues(p.outcome))) {
      const values = items.map((p) => {
        const o = p.outcome as Extract<Outcome, { type: "done" }>;
        return { a: p.job.attempt, r: o.result, p: o.progress };
      });
      return this.#driver.run<{ id: string }>(this.#queries.completeWithValues, [id, byIdJson(id, values), w]);
    }
    if (type === "done" || type === "started") {
      const attempts = byId(id, items.map((p) => p.job.attempt));
      return this.#driver.run<{ id: string }>(type === "done" ? this.#queries.complete : this.#queries.start, [id, attempts, w]);
    }
    if (type === "failed" || type === "timedOut") {
      const values = items.map((p) => {
        const o = p.outcome as Extract<Outcome, { type: "failed" }> | TimedOut;
        return [p.job.attempt, o.delayMs, o.type === "failed" && o.permanent, o.error] as const;
      });
      return this.#driver.run<{ id: string }>(type === "failed" ? this.#queries.fail : this.#queries.failTimedOut, [id, byId(id, values), w]);
    }
    const values = items.map((p) => [p.job.attempt, p.outcome.type === "snoozed" ? p.outcome.delayMs : 0] as const);
    return this.#driver.run<{ id: string }>(this.#queries.release, [id, byId(id, values), w]);
  }

  /**
   * The row at fault, alone: buried with the reason by a statement that touches nothing
   * else of it. If even that fails on its data, the worker lets the job go (its lease runs
   * out and the rescuer takes it) rather than retry it forever.
   */
  async #deadLetter(type: WriteType, item: Pending, cause: unknown): Promise<GroupResult> {
    const reason = `errand could not record this job's outcome (${type === "failed" ? `failed: ${(item.outcome as Extract<Outcome, { type: "failed" }>).error.slice(0, 1000)}` : type}), so it was moved to dead: ${errorMessage(cause)}`;
    try {
      const { rows } = await this.#driver.run<{ id: string }>(this.#queries.deadLetter, [item.job.id, item.job.attempt, this.#workerId, reason]);
      this.#onError(new ErrandError("outcome_not_written", `job ${item.job.id}: ${reason}`, { cause }));
      return { unwritten: [], lost: rows.length ? [] : [item.job.id] };
    } catch (error) {
      if (!isRowError(error)) return { unwritten: [item], lost: [], error };
      this.#onError(new ErrandError("outcome_not_written", `job ${item.job.id}: its outcome (${type}) cannot be written and it cannot be moved to dead either; it runs again after its lease: ${errorMessage(error)}`, { cause: error }));
      return { unwritten: [], lost: [item.job.id] };
    }
  }
}

/**
 * Most outcomes written by one statement. A larger backlog (outcomes that piled up during a
 * slow write) is split into statements that run side by side, so no single write holds its
 * row locks (and delays heartbeats and other workers' rescues) for long: a completion of
 * 5,000 jobs takes about 40 ms on the bench machine. Each statement costs a commit, a
 * connection of the pool and a notice for waitFor, so a busy worker's flush (about as many
 * outcomes as it claims at a time, up to a few thousand) goes as one: with 1,000 it went as
 * up to seven statements at once, and eight worker processes on two cores did 0.67× the
 * jobs/s (bench/README, round of 2026-12-04, evening). Per row the completion gets cheaper
 * up to 10,000 rows (`byId`'s JSON lookup keeps the plan linear; see src/sql/jobs.ts).
 */
export const maxRowsPerWrite = 5000;

/**
 * Whether a failed write failed on the data of its rows — SQLSTATE class 22 (data
 * exception: a value out of range, a cast) or 23 (integrity constraint violation) — so
 * writing the same rows again would fail again. Anything else (a dropped connection, a
 * server shutting down, a deadlock) may pass on a retry, and is retried.
 */
export function isRowError(error: unknown): boolean {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" && /^2[23][0-9A-Z]{3}$/.test(code);
}

/** Whether a completion carries a result or progress: only then is the heavier statement used. */
function hasValues(outcome: Written): boolean {
  return outcome.type === "done" && (outcome.result !== undefined || outcome.progress !== undefined);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
