import type { Errand } from "../client.js";
import { ErrandError, ValidationError } from "../errors.js";
import { checkKeys, integerIn } from "../validate.js";
import { defaultQueue } from "../defaults.js";
import type { ByKind, JobMap, Kind, UntypedJobs } from "../jobs.js";
import type { Handlers } from "../worker/handlers.js";
import type { WorkerEvent } from "../worker/worker.js";
import { testingQueriesFor } from "../sql/testing.js";

/** Options for {@link drain}. */
export interface DrainOptions {
  /**
   * Stop with an error after this many jobs ran while jobs are still due: a handler that
   * enqueues another job every time, or returns `snooze(0)`, would otherwise never end.
   * Default 1000.
   */
  readonly maxJobs?: number;
  /** Jobs claimed and run at once. Default 1: jobs run one by one, in claim order. */
  readonly concurrency?: number;
}

/** What one run of a job came to. `failed` = will be retried; `dead` = no retries left (or permanent). */
export type DrainOutcome = "done" | "failed" | "dead" | "snoozed";

/** One job run by {@link drain}; typed by the job map, `kind` narrows `payload`. */
export type DrainedJob<Jobs = UntypedJobs> = ByKind<{ [K in Kind<Jobs>]: DrainedRun & { readonly kind: K; readonly payload: Jobs[K] } }>;

/** A {@link DrainedJob} but for its kind and payload. */
export interface DrainedRun {
  readonly id: string;
  /** Which attempt this run was, from 1. */
  readonly attempt: number;
  readonly outcome: DrainOutcome;
  /** The error (message and stack) for `failed` and `dead`. */
  readonly error?: string;
}

/** What {@link drain} did: counts per outcome, and every job run in the order it finished. */
export interface DrainResult<Jobs = UntypedJobs> {
  readonly done: number;
  readonly failed: number;
  readonly dead: number;
  readonly snoozed: number;
  readonly jobs: readonly DrainedJob<Jobs>[];
}

/** Default for {@link DrainOptions.maxJobs}. */
const defaultMaxJobs = 1000;

/**
 * Runs every job that is due now with `handlers`, in every queue (only the kinds it has
 * handlers for: a job of another kind stays ready, as with a worker), then every job that became due as a
 * result (a handler enqueueing another job), until no job is due; outcomes are written
 * as a worker would write them. No sleeps, no timers: it returns when the queue is drained.
 *
 * A failed job is retried after its backoff (30 s and up by default), which lies in the
 * future, so it is not run again within the same drain: it is counted once as `failed`.
 * Use {@link advance} to move time forward, then drain again to run the retry.
 *
 * Throws an `ErrandError` with code `drain_limit` when `maxJobs` jobs ran and jobs are still due.
 * On a typed errand the handlers are typed by its job map, as a worker's are.
 *
 * @example
 * ```ts
 * import { drain, openTestErrand } from "errand/testing";
 *
 * const errand = await openTestErrand();
 * await errand.enqueue("place_order", { orderId: 1042 });
 * const result = await drain(errand, {
 *   place_order: async ({ orderId }: { orderId: number }) => errand.enqueue("send_receipt", { orderId }),
 *   send_receipt: async () => {},
 * });
 * // result: { done: 2, failed: 0, dead: 0, snoozed: 0, jobs: [place_order, send_receipt] }
 * await errand.close();
 * ```
 */
export async function drain<Jobs extends JobMap<Jobs>>(errand: Errand<Jobs>, handlers: NoInfer<Handlers<Jobs>>, options: DrainOptions = {}): Promise<DrainResult<Jobs>> {
  checkKeys(options, "", ["maxJobs", "concurrency"]);
  const maxJobs = options.maxJobs ?? defaultMaxJobs;
  if (!Number.isSafeInteger(maxJobs) || maxJobs < 1) throw new ValidationError("maxJobs", `must be a positive integer (got ${JSON.stringify(maxJobs)})`);
  const jobs: DrainedJob<Jobs>[] = [];
  const concurrency = integerIn(options.concurrency ?? 1, "concurrency", 1, 10_000);
  const dueQueues = async () => (await errand.driver.run<{ queue: string }>(testingQueriesFor(errand.schema).dueQueues, [])).rows.map((row) => row.queue);
  // A worker for the queues with due jobs; made again when a handler fills another queue.
  const workerFor = (queues: readonly string[]) => errand.worker({
    handlers,
    queues: Object.fromEntries((queues.length > 0 ? queues : [defaultQueue]).map((queue) => [queue, concurrency])),
    rescueIntervalMs: 0,
    workerId: "errand-testing-drain",
    onEvent: (event) => {
      const drained = toDrainedJob(event);
      // The payload is the job's as stored, of its kind's type.
      if (drained) jobs.push(drained as DrainedJob<Jobs>);
    },
  });
  let queues = await dueQueues();
  let worker = workerFor(queues);
  try {
    let ran = 0;
    while (ran < maxJobs) {
      const claimed = await worker.runOnce();
      if (claimed === 0) {
        const due = await dueQueues();
        if (due.every((queue) => queues.includes(queue))) return summarise(jobs);
        await worker.stop();
        queues = [...new Set([...queues, ...due])];
        worker = workerFor(queues);
        continue;
      }
      ran += claimed;
    }
    const { rows } = await errand.driver.run<{ due: boolean }>(testingQueriesFor(errand.schema).anyDue, []);
    if (rows[0]?.due) {
      throw new ErrandError(
        "drain_limit",
        `drain ran ${ran} jobs (maxJobs ${maxJobs}) and jobs are still due — does a handler enqueue another job every time, or return snooze(0)? ` +
          `Pass a larger maxJobs if this many jobs is expected`,
      );
    }
    return summarise(jobs);
  } finally {
    // A worker that never started stops at once; this only unregisters it from the errand.
    await worker.stop();
  }
}

function toDrainedJob(event: WorkerEvent): DrainedJob | undefined {
  if (event.type !== "job_done" && event.type !== "job_failed" && event.type !== "job_dead" && event.type !== "job_snoozed") return undefined;
  const { id, kind, payload, attempt } = event.job;
  const base = { id, kind, payload, attempt };
  switch (event.type) {
    case "job_done":
      return { ...base, outcome: "done" };
    case "job_snoozed":
      return { ...base, outcome: "snoozed" };
    case "job_failed":
      return { ...base, outcome: "failed", error: event.error };
    case "job_dead":
      return { ...base, outcome: "dead", error: event.error };
  }
}

function summarise<Jobs>(jobs: readonly DrainedJob<Jobs>[]): DrainResult<Jobs> {
  const count = (outcome: DrainOutcome) => jobs.filter((job: DrainedRun) => job.outcome === outcome).length;
  return { done: count("done"), failed: count("failed"), dead: count("dead"), snoozed: count("snoozed"), jobs };
}
