import type { Statement } from "../driver/types.js";
import { memoisePerSchema, qualified, statement } from "./statement.js";

/**
 * How long a worker's presence row counts as live after its last refresh: for stats
 * (migration 017), and for the insert trigger's notices while it says it waits (migration 027,
 * which writes the same 60 s into `jobs_notice_wanted()`).
 */
export const workerStaleSeconds = 60;

/**
 * A refresh that finds its row older than this says the row may have stopped counting
 * (see {@link WorkerQueries.present}): short of {@link workerStaleSeconds}, so that an
 * insert whose transaction began a little after the refresh's, and saw the row stale, is
 * among those the refresh reports.
 */
const nearlyStaleSeconds = workerStaleSeconds - 10;

/**
 * How long after sending a write of its row that found the row as it left it a worker may
 * start a job it holds reserved (see presence.ts): short of {@link workerStaleSeconds},
 * after which the rescuer may return those jobs (migration 031, `rescue` in src/sql/jobs.ts).
 */
export const reservedTrustMs = nearlyStaleSeconds * 1000;

/** The row's birth (started_at, epoch microseconds as text): a row deleted and written again is born later. */
const born = "(extract(epoch FROM started_at) * 1000000)::bigint::text AS born";

/** The statements of the live-worker registry (`<schema>.workers`). */
export interface WorkerQueries {
  readonly present: Statement;
  readonly leave: Statement;
  readonly waiting: Statement;
  readonly inFlight: Statement;
  readonly stillInFlight: Statement;
}

/** The statements for `schema` (memoised). */
export const workerQueriesFor = memoisePerSchema((schema): WorkerQueries => build(qualified(schema)));

function build(s: string): WorkerQueries {
  return {
    /*
     * present — worker $1 serves queues $2 and kinds $3: inserts or refreshes its row, and
     * deletes rows not seen for a day (dead workers'). one row: revived, true when the row
     * says the worker waits and, before this, was missing or (nearly) too old to count for
     * the insert trigger: inserts may have gone unannounced meanwhile; and born (see
     * WorkerPresence: a row born later than the one the worker wrote before was marked by a
     * rescuer that returned its reserved jobs, or deleted and written again). The row allows
     * that early release (migration 031).
     */
    present: statement(`
      WITH gone AS (DELETE FROM ${s}.workers WHERE seen_at < now() - interval '1 day' AND id <> $1::text),
           before AS (SELECT seen_at FROM ${s}.workers WHERE id = $1::text)
      INSERT INTO ${s}.workers (id, queues, kinds, early_release) VALUES ($1::text, $2::text[], $3::text[], true)
      ON CONFLICT (id) DO UPDATE SET queues = EXCLUDED.queues, kinds = EXCLUDED.kinds, seen_at = now(), early_release = true
      RETURNING waiting AND coalesce((SELECT seen_at FROM before) <= now() - interval '${nearlyStaleSeconds} seconds', true) AS revived, ${born}`, true),

    /* leave — worker $1 stopped. rows: none */
    leave: statement(`DELETE FROM ${s}.workers WHERE id = $1::text`),

    /*
     * waiting — worker $1 (serving queues $2 and kinds $3) waits for the insert trigger's
     * notices ($4 true) or not (migration 025, src/worker/waiting.ts); inserts its row if
     * it is missing. A column no index holds: written in place. one row: born (as present's)
     */
    waiting: statement(`
      INSERT INTO ${s}.workers (id, queues, kinds, waiting, early_release) VALUES ($1::text, $2::text[], $3::text[], $4::boolean, true)
      ON CONFLICT (id) DO UPDATE SET waiting = EXCLUDED.waiting, seen_at = now()
      RETURNING ${born}`, true),

    /*
     * inFlight — the transactions in flight now that have drawn a job id (an insert into the
     * jobs table takes a lock on its id sequence as it draws one, before its trigger looks,
     * and keeps it to the end), by their ids: a look taken after the worker's row said it
     * waits, for those whose insert may have gone unannounced (see src/worker/waiting.ts).
     * Claims and completions, which write the table but draw no id, are left out, as are
     * other schemas' and other tables' transactions. rows: one, xids (text[])
     */
    inFlight: statement(`
      SELECT coalesce(array_agg(DISTINCT x.transactionid::text), '{}') AS xids
      FROM pg_locks r JOIN pg_locks x ON x.virtualtransaction = r.virtualtransaction AND x.locktype = 'transactionid'
      WHERE r.locktype = 'relation' AND r.relation = pg_get_serial_sequence('${s}.jobs', 'id')::regclass AND r.mode = 'RowExclusiveLock' AND r.granted`, true),

    /* stillInFlight — those of transactions $1 (ids, text[]) still in flight: each holds the lock on its own id to its end. rows: one, xids (text[]) */
    stillInFlight: statement(`
      SELECT coalesce(array_agg(transactionid::text), '{}') AS xids FROM pg_locks WHERE locktype = 'transactionid' AND transactionid::text = ANY($1::text[])`, true),
  };
}
