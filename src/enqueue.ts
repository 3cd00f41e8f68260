/**
 * Enqueue, in one place: a job spec is validated (the error names the field), encoded as
 * one JSON object with named fields, and inserted with the rest of its batch in one
 * statement (`enqueue` / `enqueuePlain` in src/sql/jobs.ts read the same names).
 */
import { type DedupeMode, encodeDedupe } from "./dedupe.js";
import { defaultMaxAttempts, defaultPriority, defaultQueue, defaultRetryPolicy } from "./defaults.js";
import { runOn } from "./driver/pg.js";
import type { Driver, Queryable, Session, Statement } from "./driver/types.js";
import { ErrandError, ValidationError } from "./errors.js";
import { type ByKind, type Kind, type PayloadField, type StandardSchemaV1, type UntypedJobs, validatePayloads } from "./jobs.js";
import type { ResolvedKind } from "./options.js";
import { checkConcurrencyKey } from "./limits.js";
import { serialisePayload } from "./payload.js";
import { type RetryPolicy, resolveRetryPolicy } from "./retry-policy.js";
import { type Queries, queriesFor } from "./sql/jobs.js";
import { keyedNotice, limitQueriesFor } from "./sql/limits.js";
import { checkDate, checkKeys, checkMaxAttempts, checkQueueName, checkText, integer, nonNegativeMs, timeoutMs } from "./validate.js";

/** Options for one job at enqueue time. */
export interface EnqueueOptions {
  /** Run no earlier than this time (a Date, or an ISO 8601 string; impossible dates are refused). */
  readonly runAt?: Date | string;
  /** Run no earlier than this many milliseconds from now (the database's clock). */
  readonly delay?: number;
  /** Attempts before the job is dead. Default: the kind's, else 8. */
  readonly maxAttempts?: number;
  /** Higher runs first. Default: the kind's, else 0. */
  readonly priority?: number;
  /** While the job holds this key (see `dedupe`), an enqueue with the same key is a no-op that returns this job's id. At most 1,000 bytes. */
  readonly dedupeKey?: string;
  /**
   * The job's concurrency key, e.g. `"tenant:42"`: the limits set on it (`errand.limits.set`)
   * apply, and jobs are taken round-robin across keys. Default: the kind's, else none.
   */
  readonly concurrencyKey?: string;
  /** How long the job holds its `dedupeKey`: see {@link DedupeMode}. Default `"retained"` (until the job is pruned). */
  readonly dedupe?: DedupeMode;
  /** Backoff for this job only. */
  readonly retry?: Partial<RetryPolicy>;
  /** Maximum run time of each attempt of this job, in ms (whole, ≥ 1). Default: the kind's, else 30 minutes. */
  readonly timeoutMs?: number;
  /** The queue the job goes to. Default: its kind's, else `default`. */
  readonly queue?: string;
  /** Your connection or open transaction: the job commits or rolls back with it. */
  readonly db?: Queryable;
}

/**
 * One job for {@link Errand.enqueueMany}: its `kind`, its `payload` (which may be left out,
 * for `{}`, where `{}` is a valid payload of the kind) and its options. Typed by the job
 * map: a union with one member per kind, so `kind` picks the payload type.
 */
export type JobSpec<Jobs = UntypedJobs> = ByKind<{ [K in Kind<Jobs>]: Omit<EnqueueOptions, "db"> & { readonly kind: K } & PayloadField<Jobs[K]> }>;

/** What an enqueue returns. */
export interface EnqueueResult {
  /** The job's id (the existing job's when this was a duplicate). */
  readonly id: string;
  /** True when a job with the same dedupe key already existed and nothing was inserted. */
  readonly duplicate: boolean;
  /** Present (true) when a `dedupe: "replace"` enqueue replaced the waiting job's payload and options. */
  readonly replaced?: true;
}

/** Longest kind name, in characters. */
export const maxKindLength = 200;

/**
 * Longest dedupe key, in bytes of UTF-8: its unique index holds keys of up to about
 * 2,700 bytes, and a longer key would fail there with a btree error.
 */
const maxDedupeKeyBytes = 1000;

/** Longest delay: 100 years, so the run time stays within what PostgreSQL and JavaScript can hold. */
const longestDelayMs = 100 * 365.25 * 86_400_000;

function checkDelay(value: unknown, field: string): number {
  const ms = nonNegativeMs(value, field);
  if (ms > longestDelayMs) throw new ValidationError(field, `must be at most ${longestDelayMs} ms (100 years); give runAt for a fixed time`);
  return ms;
}

/** What enqueue needs of the client it belongs to. */
export interface EnqueueTarget {
  readonly driver: Driver;
  readonly schema: string;
  readonly kinds: ReadonlyMap<string, ResolvedKind>;
  readonly maxPayloadBytes: number;
  /** Payload schemas by kind (from `defineJobs`), checked before anything is written. */
  readonly schemas: ReadonlyMap<string, StandardSchemaV1>;
  /** The client's enqueues on its own connection now in flight, and the notices sent after their commits. */
  readonly own: OwnEnqueues;
}

/** See {@link EnqueueTarget.own}. */
export interface OwnEnqueues {
  /** Enqueues on errand's own connection that have not returned yet. */
  running: number;
  /** Notices waiting for the one being sent (see besideAnother): the earliest time in epoch microseconds (none when no insert wanted one), and whether a keyed insert is among them. */
  pending: { readonly since: number | undefined; readonly keyed: boolean } | undefined;
  /** Whether notices are being sent. */
  sending: boolean;
  /** The connections of enqueues beside another, held until their notices are sent: the client's close() waits for them. */
  readonly sessions: Set<Promise<void>>;
}

const specKeys = ["kind", "payload", "runAt", "delay", "maxAttempts", "priority", "dedupeKey", "dedupe", "retry", "timeoutMs", "queue", "concurrencyKey"];

/**
 * Enqueues `specs` in one statement (one round trip), on `db` when given (the caller's
 * transaction), else on the client's driver. Results are in input order. Nothing is
 * written unless every spec is valid.
 *
 * The workers' notices: in the caller's transaction the insert trigger sends them at its
 * commit (and the keyed notice follows the insert). So does an enqueue on errand's own
 * connection while no other is in flight. Beside another, the insert returns them instead
 * and they follow its commit in a statement of their own, which waits for no WAL flush: a
 * notice sent at an insert's commit makes concurrent enqueues commit one at a time
 * (migration 023), while one sent after it reaches the workers a round trip later.
 */
export async function enqueueJobs(target: EnqueueTarget, specs: readonly JobSpec[], options: { readonly db?: Queryable | undefined; readonly single?: boolean }): Promise<EnqueueResult[]> {
  if (!Array.isArray(specs)) throw new ValidationError("jobs", "must be an array");
  if (specs.length === 0) return [];
  // Without schemas, no await: enqueue stays one round trip and nothing more.
  const checked = target.schemas.size === 0 ? specs : await validatePayloads<JobSpec>(specs, target.schemas, (i) => (options.single ? "payload" : `jobs[${i}].payload`));
  const { json, dedupeKeys, entries, replacing, keyed } = encodeJobs(checked, target.kinds, target.maxPayloadBytes, options.single === true);
  const queries = queriesFor(target.schema);
  const on = options.db;
  /** The insert with the trigger's notice at its commit. */
  const notifying = async (run: Run): Promise<EnqueueResult[]> => {
    const results = await insertJobs(json, dedupeKeys, entries, replacing, run, queries);
    // After the insert, on the same transaction if any: delivered at its commit, so a
    // worker woken by it sees the jobs. Only keyed inserts pay this round trip.
    if (keyed) await run(limitQueriesFor(target.schema).announceKeyed, []);
    return results;
  };
  if (on) return notifying((statement, params) => runOn(on, statement, params));
  const own = target.own;
  if (own.running === 0) {
    own.running++;
    try {
      return await notifying((statement, params) => target.driver.run(statement, params));
    } finally {
      own.running--;
    }
  }
  return besideAnother(target, queries, keyed, (run) => insertJobs(json, dedupeKeys, entries, replacing, run, afterStatements(queries)));
}

/**
 * An enqueue on errand's own connection beside another in flight: `insert` returns the
 * notices instead of the trigger sending them at its commit, and errand sends them once it
 * has committed, without holding up the caller (awaited, they would add a round trip to
 * each of a caller's enqueues one after another). One statement at a time per client, on
 * the connection of the insert that found none out (through the pool it would queue behind
 * a busy producer's inserts); notices that come meanwhile wait for it and go next, together:
 * the earliest of their times (a worker's claim floor goes down to it; later ones add
 * nothing) and one keyed notice. A send that fails is dropped: the jobs are committed, and
 * a lost notice costs only time (the workers' resting poll finds the jobs).
 */
function besideAnother(target: EnqueueTarget, queries: Queries, keyed: boolean, insert: (run: Run) => Promise<EnqueueResult[]>): Promise<EnqueueResult[]> {
  const own = target.own;
  own.running++;
  return new Promise((resolve, reject) => {
    let started = false;
    const session: Promise<void> = target.driver
      .session(async (on) => {
        started = true;
        let since: number | undefined;
        let wrote = false;
        const run: Run = async <Row>(statement: Statement, params: readonly unknown[]) => {
          const result = await on.run<Row & InsertNotices>(statement, params);
          wrote = true;
          for (const notice of [result.rows[0]?.start_notice, result.rows[0]?.past_notice]) if (notice) since = Math.min(since ?? Infinity, Number(notice));
          return result;
        };
        const inserting = insert(run);
        resolve(inserting);
        await inserting.catch(() => {});
        own.running--;
        // Also when a second statement of a keyed enqueue failed: the first one's jobs are in.
        // No time when no worker waits for one (see insertNotice); the keyed notice always.
        if (since !== undefined || (keyed && wrote)) await sendNotices(own, on, queries, since, keyed);
      })
      .catch(reject) // no connection for it: nothing was written
      .finally(() => {
        if (!started) own.running--;
        own.sessions.delete(session);
      });
    own.sessions.add(session);
  });
}

/** Adds an insert's notices to the client's pending ones and, unless a send is out, sends them on `on` until none is pending. */
async function sendNotices(own: OwnEnqueues, on: Session, queries: Queries, since: number | undefined, keyed: boolean): Promise<void> {
  const earliest = Math.min(since ?? Infinity, own.pending?.since ?? Infinity);
  own.pending = { since: earliest === Infinity ? undefined : earliest, keyed: keyed || own.pending?.keyed === true };
  if (own.sending) return;
  own.sending = true;
  try {
    for (let next: OwnEnqueues["pending"] = own.pending; next !== undefined; next = own.pending) {
      own.pending = undefined;
      const notices = [...(next.since === undefined ? [] : [String(next.since)]), ...(next.keyed ? [keyedNotice] : [])];
      await on.run(queries.announceJobs, [notices]).catch(() => {});
    }
  } finally {
    own.sending = false;
  }
}

/** The notices an enqueue statement on errand's own connection returns (see insertNotice in src/sql/jobs.ts). */
interface InsertNotices {
  readonly start_notice?: string;
  readonly past_notice?: string | null;
}

/** The insert statements that leave the notices to errand (see insertNotice). */
function afterStatements(queries: Queries): InsertStatements {
  return { enqueuePlain: queries.enqueuePlainAfter, enqueue: queries.enqueueAfter, findByDedupeKeys: queries.findByDedupeKeys };
}

type InsertStatements = Pick<Queries, "enqueuePlain" | "enqueue" | "findByDedupeKeys">;

/** The insert of encoded jobs: the plain statement when no job has a dedupe key, else the keyed one. */
async function insertJobs(json: string, dedupeKeys: readonly (string | null)[], entries: readonly string[], replacing: readonly boolean[], run: Run, queries: InsertStatements): Promise<EnqueueResult[]> {
  if (dedupeKeys.every((key) => key === null)) {
    const { rows } = await run<{ ids: (string | number)[] }>(queries.enqueuePlain, [json]);
    return rows[0]!.ids.map((id) => ({ id: String(id), duplicate: false }));
  }
  const results = await enqueueKeyed(json, dedupeKeys, run, queries);
  // A replace that found its job claimed between this statement's look and its update
  // replaced nothing: once more, now that the job is seen running, so it enqueues anew
  // (unless the job holds its key while running, e.g. "active": then it is a duplicate).
  const again = results.flatMap((result, i) => (replacing[i] && result.duplicate && result.replaced === undefined ? [i] : []));
  if (again.length > 0) {
    const retried = await enqueueKeyed(`[${again.map((i) => entries[i]).join(",")}]`, again.map((i) => dedupeKeys[i]!), run, queries);
    again.forEach((i, n) => (results[i] = retried[n]!));
  }
  return results;
}

type Run = <Row>(statement: Statement, params: readonly unknown[]) => Promise<{ rows: Row[] }>;

/** The `enqueue` statement for a batch with dedupe keys, duplicates resolved to their holders' ids. */
async function enqueueKeyed(json: string, dedupeKeys: readonly (string | null)[], run: Run, queries: InsertStatements): Promise<EnqueueResult[]> {
  const { rows } = await run<{ ids: (string | number | null)[]; duplicates: boolean[]; replaced: boolean[] }>(queries.enqueue, [json]);
  const { ids, duplicates, replaced } = rows[0]!;
  const results = ids.map((id, i) => ({ id: id === null ? null : String(id), duplicate: duplicates[i]!, replaced: replaced[i]! }));
  const missing = results.flatMap((result, i) => (result.id === null ? [dedupeKeys[i]!] : []));
  if (missing.length > 0) {
    // The holder committed after this statement's snapshot: look again.
    const found = await run<{ id: string; dedupe_key: string }>(queries.findByDedupeKeys, [missing]);
    const byKey = new Map(found.rows.map((row) => [row.dedupe_key, String(row.id)]));
    results.forEach((result, i) => {
      if (result.id === null) result.id = byKey.get(dedupeKeys[i]!) ?? null;
    });
  }
  return results.map((result, i) => {
    if (result.id === null) throw new ErrandError("dedupe_race", `job with dedupe key '${dedupeKeys[i]}' was neither inserted nor found (deleted concurrently?)`);
    return result.replaced ? { id: result.id, duplicate: result.duplicate, replaced: true } : { id: result.id, duplicate: result.duplicate };
  });
}

/** A batch of validated jobs as the enqueue statements' parameter. */
export interface EncodedJobs {
  /**
   * A JSON array with one object per job, keyed by column: `kind`, `payload`, `run_at`
   * (ISO text; absent = now), `delay_ms` (absent = 0), `max_attempts`, `priority`,
   * `dedupe_key`, `retry`, `timeout_ms`, `dedupe_mode` and `dedupe_ttl_ms` (absent = none;
   * see src/dedupe.ts) `queue` (absent = default) and `concurrency_key` (absent = none). `jobInput` in src/sql/jobs.ts reads them.
   */
  readonly json: string;
  /** Each job's dedupe key, or null, in input order. */
  readonly dedupeKeys: (string | null)[];
  /** Each job's JSON object (the elements of `json`). */
  readonly entries: readonly string[];
  /** Whether each job has `dedupe: "replace"`. */
  readonly replacing: readonly boolean[];
  /** Whether some job has a concurrency key (the insert is then followed by the keyed notice, see keyedNotice). */
  readonly keyed: boolean;
}

/**
 * Validates the specs and encodes them. An error names the field, after `jobs[i].`
 * unless `single` (one job from `enqueue`, whose fields are its arguments). Payloads are serialised once, here, and spliced in as text; the JSON
 * is written out rather than built as objects and stringified, which would serialise
 * every payload a second time.
 */
export function encodeJobs(specs: readonly JobSpec[], kinds: ReadonlyMap<string, ResolvedKind>, maxPayloadBytes: number, single = false): EncodedJobs {
  const entries: string[] = [];
  const dedupeKeys: (string | null)[] = [];
  const replacing: boolean[] = [];
  let keyed = false;
  const kindsJson = new Map<string, string>();
  specs.forEach((spec, i) => {
    const field = single ? "" : `jobs[${i}].`;
    checkKeys(spec, single ? "options" : `jobs[${i}]`, specKeys);
    let kindJson = kindsJson.get(spec.kind);
    if (kindJson === undefined) kindsJson.set(spec.kind, (kindJson = JSON.stringify(checkText(spec.kind, `${field}kind`, { maxLength: maxKindLength }))));
    const kind = kinds.get(spec.kind);
    const payload = serialisePayload(spec.payload === undefined ? {} : spec.payload, maxPayloadBytes, `${field}payload`);
    if (spec.runAt !== undefined && spec.delay !== undefined) throw new ValidationError(`${field}runAt`, "give runAt or delay, not both");
    const maxAttempts = spec.maxAttempts === undefined ? (kind?.maxAttempts ?? defaultMaxAttempts) : checkMaxAttempts(spec.maxAttempts, `${field}maxAttempts`);
    const priority = spec.priority === undefined ? (kind?.priority ?? defaultPriority) : integer(spec.priority, `${field}priority`);
    let entry = `{"kind":${kindJson},"payload":${payload},"max_attempts":${maxAttempts},"priority":${priority}`;
    if (spec.runAt !== undefined) entry += `,"run_at":"${checkDate(spec.runAt, `${field}runAt`)}"`;
    if (spec.delay !== undefined) entry += `,"delay_ms":${checkDelay(spec.delay, `${field}delay`)}`;
    const dedupeKey = spec.dedupeKey === undefined ? null : checkText(spec.dedupeKey, `${field}dedupeKey`, { maxBytes: maxDedupeKeyBytes });
    if (dedupeKey !== null) entry += `,"dedupe_key":${JSON.stringify(dedupeKey)}`;
    entry += encodeDedupe(spec.dedupe, `${field}dedupe`, dedupeKey !== null);
    if (spec.retry !== undefined) entry += `,"retry":${JSON.stringify(resolveRetryPolicy(spec.retry, `${field}retry`, kind?.retry ?? defaultRetryPolicy))}`;
    if (spec.timeoutMs !== undefined) entry += `,"timeout_ms":${timeoutMs(spec.timeoutMs, `${field}timeoutMs`)}`;
    const concurrencyKey = spec.concurrencyKey === undefined ? kind?.concurrencyKey : checkConcurrencyKey(spec.concurrencyKey, `${field}concurrencyKey`);
    if (concurrencyKey !== undefined) {
      entry += `,"concurrency_key":${JSON.stringify(concurrencyKey)}`;
      keyed = true;
    }
    // Left out for the default queue (the column's default), as most jobs are.
    const queue = spec.queue === undefined ? kind?.queue : checkQueueName(spec.queue, `${field}queue`);
    if (queue !== undefined && queue !== defaultQueue) entry += `,"queue":${JSON.stringify(queue)}`;
    dedupeKeys.push(dedupeKey);
    replacing.push(spec.dedupe === "replace");
    entries.push(`${entry}}`);
  });
  return { json: `[${entries.join(",")}]`, dedupeKeys, entries, replacing, keyed };
}
