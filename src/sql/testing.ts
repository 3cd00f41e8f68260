import type { Statement } from "../driver/types.js";
import { memoisePerSchema, qualified, statement } from "./statement.js";

/** The statements the `errand/testing` helpers run (and nothing else does), one set per schema. */
export interface TestingQueries {
  readonly anyDue: Statement;
  readonly dueQueues: Statement;
  readonly advance: Statement;
  readonly listJobs: Statement;
  readonly dropSchema: Statement;
}

/** The statements for `schema` (memoised). */
export const testingQueriesFor = memoisePerSchema((schema): TestingQueries => {
  const s = qualified(schema);
  const jobs = `${s}.jobs`;
  return {
    /* anyDue — no params; rows: { due } — true when a ready job is due now (what a claim would take) */
    anyDue: statement(`SELECT EXISTS (SELECT 1 FROM ${jobs} WHERE status = 'ready' AND outcome IS NULL AND run_at <= now()) AS due`),

    /* dueQueues — no params; rows: queue — the queues with a ready job due now */
    dueQueues: statement(`SELECT DISTINCT queue FROM ${jobs} WHERE status = 'ready' AND outcome IS NULL AND run_at <= now() ORDER BY queue`),

    /*
     * advance — moves every ready job that is not yet due $1 ms earlier, as if that much
     * time had passed; the database stays the clock. Jobs already due are left alone.
     * $1 ms float8; rows: id
     */
    advance: statement(`
      UPDATE ${jobs} SET run_at = run_at - $1::float8 * interval '1 millisecond'
      WHERE status = 'ready' AND outcome IS NULL AND run_at > now()
      RETURNING id`),

    /*
     * listJobs — jobs oldest id first, filtered by $1 kind (null = any), $2 statuses
     * (null = any) and $3 payload containment (jsonb @>, null = any); rows: job
     */
    listJobs: statement(`
      SELECT j.id, j.kind, j.payload, j.status, j.priority, j.attempts, j.max_attempts, j.run_at,
             j.locked_until, j.locked_by, j.last_error, j.errors, j.retry, j.dedupe_key,
             j.created_at, j.started_at, j.finished_at, j.queue
      FROM ${s}.all_jobs j
      WHERE ($1::text IS NULL OR j.kind = $1)
        AND ($2::text[] IS NULL OR j.status = ANY($2::text[]))
        AND ($3::jsonb IS NULL OR j.payload @> $3::jsonb)
      ORDER BY j.id`),

    /* dropSchema — no params; removes a throwaway test schema and everything in it */
    dropSchema: statement(`DROP SCHEMA IF EXISTS ${s} CASCADE`),
  };
});
