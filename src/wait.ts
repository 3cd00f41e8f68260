import type { Driver } from "./driver/types.js";
import { ErrandError, NotFoundError, ValidationError } from "./errors.js";
import { type Job, isFinished } from "./job.js";
import type { Json } from "./payload.js";
import { checkKeys, positiveMs } from "./validate.js";

/** Options of `errand.waitFor`. */
export interface WaitOptions<J extends Job = Job> {
  /** Give up after this many ms, rejecting with an `ErrandError` of code `wait_timeout`. Default: wait as long as it takes. */
  readonly timeoutMs?: number;
  /** Stop waiting when it aborts, rejecting with its reason. */
  readonly signal?: AbortSignal;
  /**
   * Called with the job's progress each time a new value is seen (its current one first,
   * if it has one), in order, never twice for the same value. Intermediate values may be
   * skipped: the worker writes at most one per `progressIntervalMs`, and a notice read
   * late sees the latest. An error it throws rejects the wait.
   */
  readonly onProgress?: (progress: Json | null, job: J) => void;
}

/** One pending `waitFor`. */
interface Waiter {
  readonly id: string;
  readonly wantsProgress: boolean;
  /** Reads the job again (it may have finished or progressed). */
  readonly check: () => void;
  /** Ends the wait with `error`. */
  readonly fail: (error: unknown) => void;
}

/**
 * The pending `waitFor` calls of one errand, and the one LISTEN they share on the wait
 * channel (opened with the first waiter, closed with the last). The finishing and
 * progress statements announce the ids they changed there (see waitNotice in
 * src/sql/jobs.ts); a waiter reads its job only when its id, or `*`, is announced, or
 * after the listening connection was restored — never in a polling loop.
 */
export class Waiters {
  readonly #driver: Driver;
  readonly #channel: string;
  readonly #read: (id: string) => Promise<Job | null>;
  readonly #byId = new Map<string, Set<Waiter>>();
  #listening: Promise<() => Promise<void>> | undefined;
  #closed = false;

  constructor(driver: Driver, channel: string, read: (id: string) => Promise<Job | null>) {
    this.#driver = driver;
    this.#channel = channel;
    this.#read = read;
  }

  /**
   * Resolves with job `id` once it has finished (done or dead). Listens first and reads
   * the job then, so a job that finishes in between is not missed. Rejects with a
   * `NotFoundError` if there is no such job (or it is deleted while waited for).
   */
  wait(id: string, options: WaitOptions = {}): Promise<Job> {
    checkKeys(options, "", ["timeoutMs", "signal", "onProgress"]);
    const timeoutMs = options.timeoutMs === undefined ? undefined : positiveMs(options.timeoutMs, "timeoutMs");
    const { signal, onProgress } = options;
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw new ValidationError("signal", "must be an AbortSignal");
    if (onProgress !== undefined && typeof onProgress !== "function") throw new ValidationError("onProgress", "must be a function");
    if (this.#closed) return Promise.reject(new ErrandError("closed", `cannot wait for job ${id}: the errand is closed`));
    // The signal's reason as it is, as fetch() does (an AbortError DOMException unless given one).
    if (signal?.aborted) return Promise.reject(signal.reason as Error);

    return new Promise<Job>((resolve, reject) => {
      let settled = false;
      let reading = false;
      let again = false;
      /** The progress last passed to onProgress, as JSON text (none yet: null). */
      let seen = "null";
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => waiter.fail(signal?.reason);
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.#remove(waiter);
        fn();
      };
      const read = async () => {
        if (reading) {
          again = true;
          return;
        }
        reading = true;
        try {
          do {
            again = false;
            const job = await this.#read(id);
            if (settled) return;
            if (!job) return settle(() => reject(new NotFoundError(`no job with id ${id} (it does not exist, or was deleted while waited for)`)));
            const progress = JSON.stringify(job.progress);
            if (onProgress && progress !== seen) {
              seen = progress;
              onProgress(job.progress, job);
            }
            if (isFinished(job.status)) return settle(() => resolve(job));
          } while (again);
        } catch (error) {
          waiter.fail(error);
        } finally {
          reading = false;
        }
      };
      const waiter: Waiter = {
        id,
        wantsProgress: onProgress !== undefined,
        check: () => void read(),
        // Passed on as it is: a database error, onProgress's own, or the signal's reason.
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        fail: (error) => settle(() => reject(error)),
      };
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => waiter.fail(new ErrandError("wait_timeout", `job ${id} did not finish within ${timeoutMs} ms (it keeps running; wait again or look it up with getJob)`)), timeoutMs);
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#add(waiter);
      this.#listen().then(waiter.check, waiter.fail);
    });
  }

  /** Rejects every pending wait and stops listening. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const waiters of [...this.#byId.values()]) {
      for (const waiter of [...waiters]) waiter.fail(new ErrandError("closed", `stopped waiting for job ${waiter.id}: the errand was closed`));
    }
    await this.#unlisten();
  }

  #add(waiter: Waiter): void {
    let waiters = this.#byId.get(waiter.id);
    if (!waiters) this.#byId.set(waiter.id, (waiters = new Set()));
    waiters.add(waiter);
  }

  #remove(waiter: Waiter): void {
    const waiters = this.#byId.get(waiter.id);
    waiters?.delete(waiter);
    if (waiters?.size === 0) this.#byId.delete(waiter.id);
    if (this.#byId.size === 0) void this.#unlisten();
  }

  #listen(): Promise<void> {
    // Every waiter shares one LISTEN (with pg, a connection of its own).
    const listening = (this.#listening ??= this.#driver.listen(
      this.#channel,
      (payload) => this.#notified(payload),
      () => this.#notified(undefined),
    ));
    return listening.then(
      () => {},
      (error: unknown) => {
        if (this.#listening === listening) this.#listening = undefined;
        throw error;
      },
    );
  }

  async #unlisten(): Promise<void> {
    const listening = this.#listening;
    this.#listening = undefined;
    if (!listening) return;
    try {
      await (await listening)();
    } catch {
      // Never listened (its error went to the waiters), or the connection is gone already.
    }
  }

  /**
   * A notice: `f:` (finished) or `p:` (progress) and the ids, or `*` for all of them.
   * None at all (a driver without payloads, or a restored connection after which
   * notices may have been missed) makes every waiter read its job.
   */
  #notified(payload: string | undefined): void {
    const kind = payload?.[0];
    const list = payload?.slice(2);
    const relevant = (waiter: Waiter) => kind !== "p" || waiter.wantsProgress;
    if (list === undefined || list === "*") {
      for (const waiters of this.#byId.values()) for (const waiter of waiters) if (relevant(waiter)) waiter.check();
      return;
    }
    for (const id of list.split(",")) {
      const waiters = this.#byId.get(id);
      if (waiters) for (const waiter of waiters) if (relevant(waiter)) waiter.check();
    }
  }
}
