import type { Migration } from "./migration.js";

/** 032: a completion counts a batch's members once per statement, and a trigger on the batch row enqueues its callback. */
export const migration: Migration = {
  version: 32,
  name: "batch-count-per-statement",
  sql: `-- Until now every member that finished updated its batch's row from jobs_batch_member, so
-- a completion of n members of one batch updated that row n times in one transaction,
-- each update walking the versions the earlier ones made: 48 µs a member at 1,000 in a
-- statement, 84 µs at 4,000, and the worker's completions fell seconds behind its handlers
-- (bench/README.md, round of 2026-12-07, small hours). errand's completion now counts its
-- members itself, one update per batch (src/sql/jobs.ts, completion), and marks its
-- statement in errand.batch_counted (statement_timestamp(), for this transaction) so that
-- the member trigger passes over the rows it counted. Every other statement that moves a
-- member (fail, cancel, rescue, a retried dead member, a plain SQL update) still goes
-- through the member trigger.

-- The batch finishes where its count of unfinished members reaches 0, whoever brought it
-- there: the callback job is inserted, exactly once, under the batch row's lock, which
-- serialises members finishing at the same moment on different workers. A callback that
-- cannot be inserted (its row edited by hand into something the jobs table refuses) is
-- recorded in callback_error instead of failing the statement that finished the batch:
-- one bad batch row must not stop the outcomes written with it.
CREATE FUNCTION {{schema}}.batch_finished() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  failed bigint[];
  callback_id bigint;
  insert_error text;
BEGIN
  -- Every other member's finish committed before this transaction got the row's lock.
  failed := ARRAY(SELECT j.id FROM {{schema}}.jobs j
                  WHERE j.batch_id = NEW.id AND j.status IN ('dead', 'cancelled') ORDER BY j.id);
  BEGIN
    INSERT INTO {{schema}}.jobs (kind, payload, max_attempts, priority, retry, timeout_ms, queue)
    SELECT c.kind,
           coalesce(c.payload, '{}') || jsonb_build_object('batch', jsonb_build_object(
             'id', NEW.id::text, 'total', NEW.total, 'done', NEW.done, 'dead', NEW.dead, 'cancelled', NEW.cancelled,
             'failedIds', to_jsonb(failed::text[]))),
           coalesce(c.max_attempts, 8), coalesce(c.priority, 0), c.retry, c.timeout_ms, coalesce(c.queue, 'default')
    FROM jsonb_to_record(NEW.callback) AS c(kind text, payload jsonb, max_attempts int, priority int, retry jsonb, timeout_ms int, queue text)
    RETURNING id INTO callback_id;
  EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
    insert_error := SQLERRM;
  END;
  UPDATE {{schema}}.batches
  SET finished_at = now(), failed_ids = failed, callback_job_id = callback_id, callback_error = insert_error
  WHERE id = NEW.id;
  RETURN NULL;
END;
$$;

CREATE TRIGGER batches_finished AFTER UPDATE OF remaining ON {{schema}}.batches
  FOR EACH ROW
  WHEN (NEW.remaining = 0 AND OLD.remaining <> 0 AND NEW.finished_at IS NULL)
  EXECUTE FUNCTION {{schema}}.batch_finished();

-- A member's status moved into or out of the finished ones (done, dead, cancelled): its
-- batch's counts, as before; the batch row's trigger above finishes it. After the batch
-- finished its row is left as it was: a member retried then runs on its own and the
-- callback is not enqueued again.
CREATE OR REPLACE FUNCTION {{schema}}.batch_member_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  was_open boolean := OLD.status NOT IN ('done', 'dead', 'cancelled');
  is_open boolean := NEW.status NOT IN ('done', 'dead', 'cancelled');
BEGIN
  UPDATE {{schema}}.batches
  SET remaining = remaining - (was_open AND NOT is_open)::int + (NOT was_open AND is_open)::int,
      done = done + (NEW.status = 'done')::int - (OLD.status = 'done')::int,
      dead = dead + (NEW.status = 'dead')::int - (OLD.status = 'dead')::int,
      cancelled = cancelled + (NEW.status = 'cancelled')::int - (OLD.status = 'cancelled')::int
  WHERE id = NEW.batch_id AND finished_at IS NULL;
  RETURN NULL;
END;
$$;

-- The mark last: rows without a batch stop at the first test, as before.
DROP TRIGGER jobs_batch_member ON {{schema}}.jobs;
CREATE TRIGGER jobs_batch_member AFTER UPDATE OF status ON {{schema}}.jobs
  FOR EACH ROW
  WHEN (NEW.batch_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status
        AND (NEW.status IN ('done', 'dead', 'cancelled') OR OLD.status IN ('done', 'dead', 'cancelled'))
        AND current_setting('errand.batch_counted', true) IS DISTINCT FROM statement_timestamp()::text)
  EXECUTE FUNCTION {{schema}}.batch_member_moved();
`,
};
