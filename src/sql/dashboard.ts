import type { Statement } from "../driver/types.js";
import { memoisePerSchema, qualified, statement } from "./statement.js";

/** The dashboard's statements, for one schema. Built once per schema. */
export interface DashboardQueries {
  readonly listJobsOlder: Statement;
  readonly listJobsNewer: Statement;
  readonly findJobs: Statement;
  readonly recentKinds: Statement;
  readonly jobDetail: Statement;
  readonly deadGroups: Statement;
  readonly listDead: Statement;
  readonly overviewSeries: Statement;
}

/** The dashboard's statements for `schema` (memoised). */
export const dashboardQueriesFor = memoisePerSchema((schema): DashboardQueries => build(qualified(schema)));

/** The first line of a job's last error, cut to 300 characters: the dead-letter grouping key. */
const errorSummary = `left(split_part(coalesce(j.last_error, ''), E'\\n', 1), 300)`;

/** The columns of one row in a job list. */
const listColumns = `j.id, j.kind, j.status, j.attempts, j.max_attempts, j.run_at, j.created_at,
  j.finished_at, j.locked_by, j.dedupe_key, ${errorSummary} AS error`;

function build(s: string): DashboardQueries {
  const jobs = `${s}.jobs`;
  /** Every job, done_jobs's too (migration 018): lists and lookups by id read this; dead letters are in jobs. */
  const all = `${s}.all_jobs`;
  const filters = `($1::text IS NULL OR j.kind = $1) AND ($2::text IS NULL OR j.status = $2)`;
  return {
    /*
     * listJobsOlder — one page of jobs, newest first, older than id $3 (keyset on the
     * primary key: the cost does not grow with the page number).
     * $1 kind (null = any), $2 status (null = any), $3 before id (bigint), $4 limit
     * rows: id, kind, status, attempts, max_attempts, run_at, created_at, finished_at,
     *       locked_by, dedupe_key, error (first line of last_error)
     */
    listJobsOlder: statement(`
      SELECT ${listColumns} FROM ${all} j
      WHERE ${filters} AND j.id < $3::bigint
      ORDER BY j.id DESC LIMIT $4`),

    /*
     * listJobsNewer — the page before: jobs newer than id $3, oldest first (the caller
     * reverses them). Same parameters and rows as listJobsOlder.
     */
    listJobsNewer: statement(`
      SELECT ${listColumns} FROM ${all} j
      WHERE ${filters} AND j.id > $3::bigint
      ORDER BY j.id ASC LIMIT $4`),

    /*
     * findJobs — the search box: a job by id and/or by dedupe key (both indexed).
     * $1 id (bigint or null), $2 dedupe key (text); rows: as listJobsOlder
     */
    findJobs: statement(`
      SELECT ${listColumns} FROM ${all} j WHERE j.id = $1::bigint
      UNION
      SELECT ${listColumns} FROM ${jobs} j WHERE j.dedupe_key = $2::text
      ORDER BY id DESC`),

    /*
     * recentKinds — kinds seen among the latest 10,000 jobs or among dead jobs, for the
     * kind filter (bounded: never a scan of the whole table). No params; rows: kind
     */
    recentKinds: statement(`
      SELECT kind FROM (SELECT j.kind FROM ${all} j ORDER BY j.id DESC LIMIT 10000) recent
      UNION
      SELECT j.kind FROM ${jobs} j WHERE j.outcome = 'dead'
      ORDER BY kind`),

    /*
     * jobDetail — one whole job plus the database's clock, so ages are measured on the
     * database's time. $1 id; rows: every jobs column, db_now
     */
    jobDetail: statement(`SELECT j.*, now() AS db_now FROM ${all} j WHERE j.id = $1::bigint`),

    /*
     * deadGroups — dead letters grouped by kind and the first line of their last error,
     * largest group first. $1 limit
     * rows: kind, error, count (int), first_id, last_id, last_died (timestamptz)
     */
    deadGroups: statement(`
      SELECT j.kind, ${errorSummary} AS error, count(*)::int AS count,
             min(j.id) AS first_id, max(j.id) AS last_id, max(j.finished_at) AS last_died
      FROM ${jobs} j WHERE j.outcome = 'dead'
      GROUP BY j.kind, ${errorSummary}
      ORDER BY count(*) DESC, j.kind, ${errorSummary}
      LIMIT $1`),

    /*
     * listDead — one page of dead jobs, oldest id first, after id $3 (keyset).
     * $1 kind (null = any), $2 error summary (null = any), $3 after id, $4 limit
     * rows: as listJobsOlder
     */
    listDead: statement(`
      SELECT ${listColumns} FROM ${jobs} j
      WHERE j.outcome = 'dead' AND ($1::text IS NULL OR j.kind = $1)
        AND ($2::text IS NULL OR ${errorSummary} = $2) AND j.id > $3::bigint
      ORDER BY j.id LIMIT $4`),

    /*
     * overviewSeries — completions and failed attempts per minute over the last $1
     * minutes, from the outcome counters (migration 003: 10-second buckets kept by
     * triggers), so the cost does not grow with the jobs table. Minute 0 is the current one.
     * $1 minutes (int); rows: minutes_ago (int), done (int), failed (int), oldest first
     */
    overviewSeries: statement(`
      WITH buckets AS (
        SELECT floor(extract(epoch FROM now() - c.bucket) / 60)::int AS ago, sum(c.done) AS done, sum(c.failed) AS failed
        FROM ${s}.outcome_counts c
        WHERE c.bucket > now() - $1::int * interval '1 minute'
        GROUP BY 1
      )
      SELECT m.ago AS minutes_ago, coalesce(b.done, 0)::int AS done, coalesce(b.failed, 0)::int AS failed
      FROM generate_series(0, $1::int - 1) AS m(ago)
      LEFT JOIN buckets b ON b.ago = m.ago
      ORDER BY m.ago DESC`),
  };
}
