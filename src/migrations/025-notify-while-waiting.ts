import type { Migration } from "./migration.js";

/**
 * 025: the insert trigger notifies only while a worker waits for notices (or when a notice
 * is needed anyway): inserts beside busy workers, or with none running, commit without
 * NOTIFY's lock.
 */
export const migration: Migration = {
  version: 25,
  name: "notify-while-waiting",
  sql: `-- A transaction that notifies commits behind a lock the whole server shares, held through
-- its WAL flush (see migration 023), so one-job transactions from many callers at once commit
-- one at a time. Only a worker that waits for work needs the notice: one whose claims keep
-- finding jobs claims again without it. So each worker's row in the registry says whether it
-- waits (src/worker/waiting.ts), and the trigger notifies when a row says so. Rows that
-- predate this column, and a killed worker's, say so until deleted: inserts notify, as before.
-- A worker that starts waiting claims again once every transaction in flight at that moment
-- has ended, so a job whose trigger looked before cannot wait for the poll.
-- The trigger also notifies:
-- - in a transaction that is not READ COMMITTED: its snapshot may predate the row's change,
--   and its id be drawn after the worker looked at the transactions in flight;
-- - when the transaction began more than the claim's slack (100 ms, claimFloorSlackMs) before the insert:
--   its jobs' run_at (its start) may lie below where busy workers claim, and the notice
--   carries that start (migration 019).
-- Adding a column with a constant default rewrites nothing; replacing the function takes no
-- lock on the jobs table.
ALTER TABLE {{schema}}.workers ADD COLUMN waiting boolean NOT NULL DEFAULT true;
CREATE OR REPLACE FUNCTION {{schema}}.notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('errand.jobs_notice', true) IS DISTINCT FROM 'after'
     AND (EXISTS (SELECT 1 FROM {{schema}}.workers WHERE waiting)
          OR current_setting('transaction_isolation') <> 'read committed'
          OR clock_timestamp() - now() > interval '100 milliseconds') THEN
    PERFORM pg_notify('{{channel}}', floor(extract(epoch FROM now()) * 1000000)::bigint::text);
  END IF;
  RETURN NULL;
END;
$$;
`,
};
