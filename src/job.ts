import type { Json } from "./payload.js";

/**
 * A job's status. Who moves it:
 * - `ready` → `running`: a worker's claim (lease set; attempts + 1 once the handler
 *   starts — a job claimed ahead into the worker's buffer is only reserved until then).
 * - `running` → `done`: the worker's completer, after the handler resolved.
 * - `running` → `ready`: a failure with attempts left (after a backoff), a graceful
 *   release (attempt refunded), or the rescuer when the lease expired (a reserved job
 *   that never started comes back unspent).
 * - `running` → `dead`: a permanent error, the last attempt failing, or the rescuer
 *   burying a job whose last attempt's lease expired.
 * - `dead` → `ready`: a person retrying it (attempts reset); `dead` → deleted: discard.
 * - `ready` or `running` → `cancelled`: a person cancelling it (`errand.cancel`); never
 *   retried. A running job's handler is aborted at its worker's next heartbeat, sent at once.
 * - `done` → deleted: the purger (`errand purge`), after the retention period.
 */
export type JobStatus = "ready" | "running" | "done" | "dead" | "cancelled";

/** Every {@link JobStatus}, in the order a job moves through them. */
export const JOB_STATUSES: readonly JobStatus[] = ["ready", "running", "done", "dead", "cancelled"];

/** One recorded failure in a job's history. */
export interface JobError {
  readonly attempt: number;
  readonly at: string;
  readonly error: string;
  /**
   * `false` when the lease expired on a job claimed ahead whose handler never started:
   * the attempt was not spent (see docs/crash-safety.md).
   */
  readonly started?: false;
}

/** Whether a job has finished for good: done, dead or cancelled. What `errand.waitFor` waits for. */
export function isFinished(status: JobStatus): boolean {
  return status === "done" || status === "dead" || status === "cancelled";
}

/**
 * A job row as errand returns it. Ids are strings: PostgreSQL `bigint` exceeds JS numbers.
 * An errand typed by a job map returns its jobs as `JobOf<Jobs>`: a `Job` per kind, so
 * checking `job.kind` narrows `job.payload`.
 */
export interface Job<Payload = unknown, Kind extends string = string> {
  readonly id: string;
  readonly kind: Kind;
  /** The queue it belongs to (`default` unless its kind or its enqueue named one). */
  readonly queue: string;
  /** As stored: plain JSON. */
  readonly payload: Payload;
  readonly status: JobStatus;
  readonly priority: number;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly runAt: Date;
  readonly lockedUntil: Date | null;
  readonly lockedBy: string | null;
  readonly lastError: string | null;
  readonly errors: readonly JobError[];
  readonly dedupeKey: string | null;
  readonly createdAt: Date;
  readonly startedAt: Date | null;
  readonly finishedAt: Date | null;
  /**
   * The state its handler last saved with `ctx.checkpoint()` (given to the next attempt as
   * `ctx.lastCheckpoint`), or null. Kept after the job finishes.
   */
  readonly checkpoint: Json | null;
  /** What the handler returned (plain JSON), once the job is done; null when it returned nothing (or null). */
  readonly result: Json | null;
  /** The last value the handler reported with `ctx.progress()` (kept after the job finishes); null if none. */
  readonly progress: Json | null;
  /** The batch the job is a member of (`errand.batch`), or null. */
  readonly batchId: string | null;
}

/** The row shape the job queries return. */
export interface JobRow {
  id: string | number;
  kind: string;
  payload: unknown;
  status: JobStatus;
  priority: number;
  attempts: number;
  max_attempts: number;
  run_at: Date | string;
  locked_until: Date | string | null;
  locked_by: string | null;
  last_error: string | null;
  errors: unknown;
  retry: unknown;
  dedupe_key: string | null;
  created_at: Date | string;
  started_at: Date | string | null;
  finished_at: Date | string | null;
  /** As text (a checkpoint may be a JSON string, which a driver's parsing would make ambiguous). */
  checkpoint?: string | null;
  /** Absent from queries that do not select it (they show no result). */
  result?: unknown;
  progress?: unknown;
  /** Absent before migration 013 and from queries that do not select it. */
  batch_id?: string | number | null;
  /** Absent from queries that do not select it (read as `default`). */
  queue?: string;
}

/** Converts a row to the public {@link Job} shape. */
export function toJob(row: JobRow): Job {
  return {
    id: String(row.id),
    kind: row.kind,
    queue: row.queue ?? "default",
    payload: row.payload,
    status: row.status,
    priority: Number(row.priority),
    attempts: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
    runAt: toDate(row.run_at),
    lockedUntil: row.locked_until === null ? null : toDate(row.locked_until),
    lockedBy: row.locked_by,
    lastError: row.last_error,
    errors: (parseJson(row.errors) as JobError[] | null) ?? [],
    dedupeKey: row.dedupe_key,
    createdAt: toDate(row.created_at),
    startedAt: row.started_at === null ? null : toDate(row.started_at),
    finishedAt: row.finished_at === null ? null : toDate(row.finished_at),
    checkpoint: typeof row.checkpoint === "string" ? (JSON.parse(row.checkpoint) as Json) : null,
    // As the payload: both drivers parse jsonb (parseJson would turn a string result "12" into 12).
    result: (row.result as Json | undefined) ?? null,
    progress: (row.progress as Json | undefined) ?? null,
    batchId: row.batch_id === undefined || row.batch_id === null ? null : String(row.batch_id),
  };
}

/** Drivers differ: some parse jsonb, some hand back text. */
export function parseJson(value: unknown): unknown {
  return typeof value === "string" ? JSON.parse(value) : value;
}

/**
 * A timestamp column as a Date. PostgreSQL's `infinity` and `-infinity` (which a plain-SQL
 * insert may store, and drivers hand back as ±Infinity or as text) become the latest and
 * earliest Dates JavaScript can hold, so they still compare and sort as infinities do.
 */
export function toDate(value: Date | string | number): Date {
  if (value instanceof Date) return value;
  if (value === Infinity || value === "infinity") return new Date(8.64e15);
  if (value === -Infinity || value === "-infinity") return new Date(-8.64e15);
  return new Date(value);
}

/** True for the Dates {@link toDate} makes of `infinity` and `-infinity`. */
export function isInfinite(date: Date): boolean {
  return Math.abs(date.getTime()) === 8.64e15;
}
