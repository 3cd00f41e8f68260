import type { Statement } from "../driver/types.js";
import { jobInput, pastRunAtNotice } from "./jobs.js";
import { channelFor, memoisePerSchema, qualified, statement } from "./statement.js";

/** The statements of batches (src/batches.ts), for one schema. */
export interface BatchQueries {
  readonly create: Statement;
  readonly get: Statement;
  readonly list: Statement;
  readonly members: Statement;
}

/** The statements for `schema` (memoised). */
export const batchQueriesFor = memoisePerSchema((schema): BatchQueries => build(qualified(schema), channelFor(schema)));

/** A batch's columns as every statement here returns them; failed_ids are the live ones until it finishes. */
function batchColumns(s: string): string {
  return `b.id, b.total, b.remaining, b.done, b.dead, b.cancelled, b.callback, b.callback_job_id, b.callback_error, b.created_at, b.finished_at,
         coalesce(b.failed_ids, ARRAY(SELECT j.id FROM ${s}.jobs j
                                      WHERE j.batch_id = b.id AND j.status IN ('dead', 'cancelled') ORDER BY j.id))::text[] AS failed_ids`;
}

function build(s: string, channel: string): BatchQueries {
  return {
    /*
     * create — the batch row and its members in one statement: both or neither, on the
     * caller's connection or transaction. The members are inserted like enqueuePlain's
     * (ids in input order), with batch_id set; the callback waits in the batch row until
     * the trigger of migration 013 inserts it. Members given a run_at in the past are
     * announced (see pastRunAtNotice).
     * $1 a JSON array of jobs (see jobInput; no dedupe keys), $2 the callback job (JSON
     * object, as one element of $1); one row: batch_id, ids
     */
    create: statement(`
      WITH batch AS (
        INSERT INTO ${s}.batches (total, remaining, callback)
        SELECT n, n, $2::text::jsonb FROM (SELECT jsonb_array_length($1::jsonb) AS n) c
        RETURNING id
      ), inserted AS (
        INSERT INTO ${s}.jobs (kind, payload, run_at, max_attempts, priority, retry, timeout_ms, queue, concurrency_key, batch_id)
        SELECT kind, payload, run_at, max_attempts, priority, retry, timeout_ms, queue, concurrency_key, (SELECT id FROM batch)
        FROM ${jobInput(false)} AS input
        RETURNING id, run_at
      )
      SELECT (SELECT id FROM batch) AS batch_id, array_agg(id ORDER BY id) AS ids, ${pastRunAtNotice(channel, "SELECT run_at FROM inserted")}
      FROM inserted`),

    /* get — $1 batch id; rows: batch */
    get: statement(`SELECT ${batchColumns(s)} FROM ${s}.batches b WHERE b.id = $1::bigint`),

    /*
     * list — newest first, keyset by id: $1 before id (null = from the newest), $2 limit,
     * $3 'open' | 'finished' | null (any); rows: batch
     */
    list: statement(`
      SELECT ${batchColumns(s)} FROM ${s}.batches b
      WHERE ($1::bigint IS NULL OR b.id < $1::bigint)
        AND ($3::text IS NULL OR ($3::text = 'open') = (b.finished_at IS NULL))
      ORDER BY b.id DESC LIMIT $2`),

    /*
     * members — a batch's jobs, by id, after id $2 (keyset), at most $3.
     * $1 batch id; rows: id, kind, status, attempts, max_attempts, finished_at, last_error (first line)
     */
    members: statement(`
      SELECT j.id, j.kind, j.status, j.attempts, j.max_attempts, j.finished_at, split_part(coalesce(j.last_error, ''), E'\\n', 1) AS error
      FROM ${s}.jobs j
      WHERE j.batch_id = $1::bigint AND j.id > $2::bigint
      ORDER BY j.id LIMIT $3`),
  };
}
