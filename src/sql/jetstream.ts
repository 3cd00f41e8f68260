import type { Statement } from "../driver/types.js";
import { memoisePerSchema, qualified, statement } from "./statement.js";

/** The statements of the JetStream transport (src/jetstream/), for one schema. */
export interface JetStreamQueries {
  readonly bury: Statement;
  readonly forward: Statement;
  readonly outboxCount: Statement;
}

/** The statements for `schema` (memoised). */
export const jetstreamQueriesFor = memoisePerSchema((schema): JetStreamQueries => build(qualified(schema)));

function build(s: string): JetStreamQueries {
  const jobs = `${s}.jobs`;
  return {
    /*
     * bury — a JetStream job that failed for good, as a dead row in jobs, so `errand dead`
     * and the dashboard show it. Its dedupe_key is `jetstream:<stream>:<message id>`: a
     * worker that dies between this insert and its ack, and the delivery that follows,
     * leave one row, not two. $1 kind, $2 payload (JSON text), $3 attempts int, $4
     * max_attempts int, $5 queue, $6 retry (JSON text or null), $7 error text, $8 message
     * id, $9 dedupe key, $10 the earlier attempts' errors (JSON array text, oldest first;
     * the last attempt's is added). rows: id (none when the row was there already)
     */
    bury: statement(`
      INSERT INTO ${jobs} (kind, payload, status, attempts, max_attempts, queue, retry, last_error, errors, finished_at, dedupe_key)
      VALUES ($1, $2::text::jsonb, 'dead', $3, $4, $5, $6::text::jsonb, $7,
              $10::text::jsonb || jsonb_build_array(jsonb_build_object('attempt', $3::int, 'at', now(), 'error', $7::text, 'transport', 'jetstream', 'messageId', $8::text)),
              now(), $9)
      ON CONFLICT (dedupe_key) DO NOTHING
      RETURNING id`),

    /*
     * forward — moves the queue's ready rows (a dead JetStream job retried with `errand dead
     * retry`, or a job enqueued into the queue through PostgreSQL) to the outbox, for the
     * relay to publish to JetStream: one transaction, so a row is in one place or the
     * other. Uses jobs_ready_plain; keyed rows (concurrency_key) stay where they are.
     * $1 queue, $2 topic, $3 limit. rows: moved (int)
     */
    forward: statement(`
      WITH moved AS (
        DELETE FROM ${jobs} WHERE id IN (
          SELECT id FROM ${jobs}
          WHERE queue = $1 AND status = 'ready' AND outcome IS NULL AND concurrency_key IS NULL AND run_at <= now()
          ORDER BY priority DESC, run_at, id
          LIMIT $3
          FOR UPDATE SKIP LOCKED)
        RETURNING id, kind, payload, max_attempts, retry),
      sent AS (
        INSERT INTO ${s}.outbox (topic, message)
        SELECT $2, jsonb_build_object('kind', kind, 'payload', payload, 'maxAttempts', max_attempts, 'retry', retry, 'jobId', id::text)
        FROM moved ORDER BY id
        RETURNING 1)
      SELECT count(*)::int AS moved FROM sent`),

    /* outboxCount — the queue's jobs still in the outbox. $1 topic. rows: n (int) */
    outboxCount: statement(`SELECT count(*)::int AS n FROM ${s}.outbox WHERE topic = $1`),
  };
}
