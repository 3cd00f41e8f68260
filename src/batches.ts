/**
 * Batches: fan-out / fan-in. Jobs enqueued together as one batch, and a callback job that
 * the database enqueues exactly once when every member has finished (done, dead or
 * cancelled). The counting is done by the trigger of migration 013, under the batch row's
 * lock, so it holds whichever worker finishes the last member, and for every path that
 * finishes a job (worker, cancel, rescuer, dead-lettering).
 */
import { runOn } from "./driver/pg.js";
import type { Driver, Queryable, Statement } from "./driver/types.js";
import { type EnqueueOptions, type EnqueueTarget, type JobSpec, encodeJobs, maxKindLength } from "./enqueue.js";
import { NotFoundError, ValidationError } from "./errors.js";
import { type ByKind, type Kind, type PayloadField, type UntypedJobs, validatePayloads } from "./jobs.js";
import type { Json } from "./payload.js";
import { toDate } from "./job.js";
import { batchQueriesFor } from "./sql/batches.js";
import { limitQueriesFor } from "./sql/limits.js";
import { checkId, checkKeys, checkText, integerIn } from "./validate.js";

/** Most members in one batch: the callback's payload lists the failed ones' ids, and one statement inserts them all. */
export const maxBatchSize = 10_000;

/** What the callback job's payload carries under `batch`: how the batch ended. */
export interface BatchSummary {
  /** The batch's id. */
  readonly id: string;
  /** Members in the batch. */
  readonly total: number;
  /** Members that finished `done`. */
  readonly done: number;
  /** Members that finished `dead`. */
  readonly dead: number;
  /** Members that were cancelled. */
  readonly cancelled: number;
  /** The ids of the dead and cancelled members, ascending. */
  readonly failedIds: readonly string[];
}

/**
 * The payload of a batch's callback job: the payload given in `then`, plus `batch`. Declare
 * the callback kind's payload with it to type `then` and the handler:
 *
 * @example
 * ```ts
 * const jobs = defineJobs({
 *   resize: { payload: json<{ imageId: number }>() },
 *   album_ready: { payload: json<BatchCallbackPayload<{ albumId: number }>>() },
 * });
 * ```
 */
export type BatchCallbackPayload<Payload extends object = Record<string, never>> = Payload & { readonly batch: BatchSummary };

/** The options a callback job takes: it runs as soon as the batch finishes, so no `runAt`, `delay` or `dedupeKey`. */
export type BatchCallbackOptions = Pick<EnqueueOptions, "maxAttempts" | "priority" | "retry" | "timeoutMs" | "queue">;

/** The kinds of a job map whose payload has a `batch` (see {@link BatchCallbackPayload}); any kind on an untyped errand. */
export type BatchCallbackKind<Jobs> = { [K in Kind<Jobs>]: unknown extends Jobs[K] ? K : Jobs[K] extends { readonly batch: BatchSummary } ? K : never }[Kind<Jobs>];

/** The callback of a batch: its kind, its payload without `batch` (errand adds it), and its options. */
export type BatchCallbackSpec<Jobs = UntypedJobs> = ByKind<{
  [K in BatchCallbackKind<Jobs>]: BatchCallbackOptions & { readonly kind: K } & PayloadField<unknown extends Jobs[K] ? { readonly [key: string]: Json } : Omit<Jobs[K], "batch">>;
}>;

/** A member of a batch: a job spec as for `enqueueMany`, without `dedupeKey` (a duplicate would not be a member). */
export type BatchJobSpec<Jobs = UntypedJobs> = ByKind<{ [K in Kind<Jobs>]: Omit<EnqueueOptions, "db" | "dedupeKey"> & { readonly kind: K } & PayloadField<Jobs[K]> }>;

/** What {@link Errand.batch} enqueues. */
export interface BatchSpec<Jobs = UntypedJobs> {
  /** The members: 1 to 10,000 jobs. */
  readonly jobs: readonly BatchJobSpec<Jobs>[];
  /** The job enqueued once every member has finished. */
  readonly then: BatchCallbackSpec<Jobs>;
}

/** What {@link Errand.batch} returns. */
export interface BatchResult {
  readonly batchId: string;
  /** The members' ids, in input order. */
  readonly jobIds: string[];
}

/** A batch as {@link Errand.getBatch} reads it. */
export interface Batch {
  readonly id: string;
  /** `open` while members are unfinished; `finished` once the callback was enqueued. */
  readonly status: "open" | "finished";
  readonly total: number;
  /** Members not finished yet. */
  readonly remaining: number;
  readonly done: number;
  readonly dead: number;
  readonly cancelled: number;
  /** The dead and cancelled members' ids, ascending: so far while open, as given to the callback once finished. */
  readonly failedIds: readonly string[];
  /** The callback as given: its kind and payload (without `batch`). */
  readonly callback: { readonly kind: string; readonly payload: Json };
  /** The callback job, once the batch finished. */
  readonly callbackJobId: string | null;
  /**
   * Why the callback could not be inserted when the batch finished (its batch row was edited
   * into something the jobs table refuses), or null. The members' outcomes were written.
   */
  readonly callbackError: string | null;
  readonly createdAt: Date;
  readonly finishedAt: Date | null;
}

/** One member of a batch, as its page lists it. */
export interface BatchMember {
  readonly id: string;
  readonly kind: string;
  readonly status: string;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly finishedAt: Date | null;
  /** First line of the last error ("" when none). */
  readonly error: string;
}

const callbackKeys = ["kind", "payload", "maxAttempts", "priority", "retry", "timeoutMs", "queue"];

/** The batch summary a schema sees when it checks a callback payload: the shape, with no member finished yet. */
const placeholderSummary = (total: number): BatchSummary => ({ id: "0", total, done: 0, dead: 0, cancelled: 0, failedIds: [] });

/**
 * Validates a batch (every error names its field: `jobs[3].payload.x`, `then.kind`) and
 * inserts the batch row and its members in one statement, on `db` when given.
 */
export async function createBatch(target: EnqueueTarget, spec: BatchSpec, db: Queryable | undefined): Promise<BatchResult> {
  checkKeys(spec, "batch", ["jobs", "then"]);
  if (typeof spec !== "object" || spec === null) throw new ValidationError("batch", "must be an object: { jobs, then }");
  const { jobs, then } = spec;
  if (!Array.isArray(jobs)) throw new ValidationError("jobs", "must be an array of jobs");
  if (jobs.length === 0) throw new ValidationError("jobs", "a batch needs at least one job (with none, enqueue the callback job itself)");
  if (jobs.length > maxBatchSize) throw new ValidationError("jobs", `a batch holds at most ${maxBatchSize} jobs, got ${jobs.length}; split the work into several batches`);
  jobs.forEach((job: unknown, i) => {
    if (typeof job === "object" && job !== null && "dedupeKey" in job) {
      throw new ValidationError(`jobs[${i}].dedupeKey`, "is not allowed in a batch: a duplicate would be another job, not a member");
    }
  });
  const callback = await checkCallback(target, then, jobs.length);
  const members = target.schemas.size === 0 ? jobs : await validatePayloads<JobSpec>(jobs as readonly JobSpec[], target.schemas, (i) => `jobs[${i}].payload`);
  const { json, keyed } = encodeJobs(members as readonly JobSpec[], target.kinds, target.maxPayloadBytes);
  const create = batchQueriesFor(target.schema).create;
  const params = [json, callback];
  const { rows } = db ? await runOn<CreatedRow>(db, create, params) : await target.driver.run<CreatedRow>(create, params);
  // Keyed members: the keyed notice, after the insert (see enqueueJobs).
  if (keyed) {
    const announce = limitQueriesFor(target.schema).announceKeyed;
    await (db ? runOn(db, announce, []) : target.driver.run(announce, []));
  }
  const row = rows[0]!;
  return { batchId: String(row.batch_id), jobIds: row.ids.map(String) };
}

interface CreatedRow {
  batch_id: string | number;
  ids: (string | number)[];
}

/** The callback, checked and encoded as one job (see EncodedJobs in src/enqueue.ts). */
async function checkCallback(target: EnqueueTarget, then: unknown, total: number): Promise<string> {
  if (typeof then !== "object" || then === null || Array.isArray(then)) throw new ValidationError("then", "must be the callback job: { kind, payload?, …options }");
  for (const key of ["runAt", "delay", "dedupeKey"]) {
    if (key in then) throw new ValidationError(`then.${key}`, "is not allowed: the callback is enqueued once, when the batch finishes");
  }
  checkKeys(then, "then", callbackKeys);
  const spec = then as { kind?: unknown; payload?: unknown };
  const kind = checkText(spec.kind, "then.kind", { maxLength: maxKindLength });
  let payload = spec.payload === undefined ? {} : spec.payload;
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    throw new ValidationError("then.payload", "must be a JSON object: errand adds the batch's outcome to it as `batch`");
  }
  if ("batch" in payload) throw new ValidationError("then.payload.batch", "is set by errand (the batch's outcome); use another name");
  const schema = target.schemas.get(kind);
  if (schema) {
    // The kind's schema checks the payload the callback will carry, outcome included.
    const [checked] = await validatePayloads([{ kind, payload: { ...payload, batch: placeholderSummary(total) } }], target.schemas, () => "then.payload");
    const output = checked!.payload;
    if (typeof output !== "object" || output === null || Array.isArray(output)) throw new ValidationError("then.payload", "the kind's schema must give an object");
    const { batch: _, ...rest } = output as Record<string, unknown>;
    payload = rest;
  }
  try {
    // Held to maxPayloadBytes as given: the outcome the database adds is not counted.
    const { json } = encodeJobs([{ ...(then as JobSpec), kind, payload }], target.kinds, target.maxPayloadBytes, true);
    return json.slice(1, -1);
  } catch (error) {
    // encodeJobs names a lone job's fields bare (`priority`): they are the callback's.
    if (error instanceof ValidationError) throw new ValidationError(`then.${error.field}`, error.message.slice(error.field.length + 2));
    throw error;
  }
}

interface BatchRow {
  id: string | number;
  total: number;
  remaining: number;
  done: number;
  dead: number;
  cancelled: number;
  callback: unknown;
  callback_job_id: string | number | null;
  callback_error: string | null;
  created_at: Date | string;
  finished_at: Date | string | null;
  failed_ids: (string | number)[];
}

function toBatch(row: BatchRow): Batch {
  const callback = (typeof row.callback === "string" ? JSON.parse(row.callback) : row.callback) as { kind: string; payload: Json };
  return {
    id: String(row.id),
    status: row.finished_at === null ? "open" : "finished",
    total: Number(row.total),
    remaining: Number(row.remaining),
    done: Number(row.done),
    dead: Number(row.dead),
    cancelled: Number(row.cancelled),
    failedIds: row.failed_ids.map(String),
    callback: { kind: callback.kind, payload: callback.payload },
    callbackJobId: row.callback_job_id === null ? null : String(row.callback_job_id),
    callbackError: row.callback_error,
    createdAt: toDate(row.created_at),
    finishedAt: row.finished_at === null ? null : toDate(row.finished_at),
  };
}

/** One batch by id, or null. */
export async function readBatch(driver: Driver, schema: string, id: string | number): Promise<Batch | null> {
  const { rows } = await driver.run<BatchRow>(batchQueriesFor(schema).get, [checkId(id, "id")]);
  return rows[0] ? toBatch(rows[0]) : null;
}

/** Options of {@link Errand.listBatches}. */
export interface ListBatchesOptions {
  /** Only open or only finished batches. Default: both. */
  readonly status?: "open" | "finished";
  /** At most this many (1–1,000). Default 50. */
  readonly limit?: number;
  /** Only batches with a smaller id than this (the next page: the last id of this one). */
  readonly beforeId?: string | number;
}

/** Batches, newest first. */
export async function listBatches(driver: Driver, schema: string, options: ListBatchesOptions = {}): Promise<Batch[]> {
  checkKeys(options, "", ["status", "limit", "beforeId"]);
  const status = options.status ?? null;
  if (status !== null && status !== "open" && status !== "finished") throw new ValidationError("status", `must be "open" or "finished", got ${JSON.stringify(status)}`);
  const limit = integerIn(options.limit ?? 50, "limit", 1, 1000);
  const before = options.beforeId === undefined ? null : checkId(options.beforeId, "beforeId");
  const { rows } = await driver.run<BatchRow>(batchQueriesFor(schema).list, [before, limit, status]);
  return rows.map(toBatch);
}

/** A page of a batch's members, by id; a NotFoundError when there is no such batch. */
export async function listBatchMembers(driver: Driver, schema: string, id: string | number, options: { readonly afterId?: string | number; readonly limit?: number } = {}): Promise<BatchMember[]> {
  const batchId = checkId(id, "id");
  const limit = integerIn(options.limit ?? 100, "limit", 1, 1000);
  const after = options.afterId === undefined ? "0" : checkId(options.afterId, "afterId");
  const queries = batchQueriesFor(schema);
  const run = (statement: Statement, params: unknown[]) => driver.run<MemberRow>(statement, params);
  const { rows } = await run(queries.members, [batchId, after, limit]);
  if (rows.length === 0 && after === "0" && (await readBatch(driver, schema, batchId)) === null) throw new NotFoundError(`no batch with id ${batchId}`);
  return rows.map((row) => ({
    id: String(row.id),
    kind: row.kind,
    status: row.status,
    attempts: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
    finishedAt: row.finished_at === null ? null : toDate(row.finished_at),
    error: row.error,
  }));
}

interface MemberRow {
  id: string | number;
  kind: string;
  status: string;
  attempts: number;
  max_attempts: number;
  finished_at: Date | string | null;
  error: string;
}
