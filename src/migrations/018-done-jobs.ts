import type { Migration } from "./migration.js";

/** The jobs table's columns, in its order: done_jobs has the same, and all_jobs lists them for both. */
const columns = `id, kind, payload, status, priority, attempts, max_attempts, run_at, locked_until, locked_by,
  last_error, errors, retry, dedupe_key, created_at, started_at, finished_at, timeout_ms, checkpoint, result,
  progress, queue, dedupe_mode, dedupe_until, batch_id, concurrency_key`;

/** 018: done jobs leave the jobs table for done_jobs as they complete; all_jobs reads both. */
export const migration: Migration = {
  version: 18,
  name: "done-jobs",
  sql: `-- Done jobs, moved out of jobs by the worker's completing statement (DELETE … RETURNING
-- feeding an INSERT here, in one statement): a completion writes one new row and one index
-- entry instead of a new version of the job with an entry in every index of jobs (its
-- primary key, the dedupe_key index's NULL entry, jobs_done), and jobs keeps only the jobs
-- that are waiting, running or dead, so the claim's and the rescuer's scans never meet the
-- retained history. Moved: jobs with no dedupe_key (a retained key must stay where
-- ON CONFLICT (dedupe_key) sees it), no batch (the batch trigger counts its members'
-- moves in jobs) and no concurrency_key (a rate limit counts its key's recent starts in
-- jobs). Those, and jobs marked done by plain SQL, stay in jobs as done rows; all_jobs
-- reads both tables, and the purger deletes from both.
-- A new table, a view and triggers: nothing on the jobs table changes, so no lock is
-- taken on it and no data moves; done rows already in jobs stay there until purged.
CREATE TABLE {{schema}}.done_jobs (
  id              bigint      PRIMARY KEY,
  kind            text        NOT NULL,
  payload         jsonb       NOT NULL,
  status          text        NOT NULL,
  priority        int         NOT NULL,
  attempts        int         NOT NULL,
  max_attempts    int         NOT NULL,
  run_at          timestamptz NOT NULL,
  locked_until    timestamptz,
  locked_by       text,
  last_error      text,
  errors          jsonb       NOT NULL,
  retry           jsonb,
  dedupe_key      text,
  created_at      timestamptz NOT NULL,
  started_at      timestamptz,
  finished_at     timestamptz NOT NULL,
  timeout_ms      int,
  checkpoint      jsonb,
  result          jsonb,
  progress        jsonb,
  queue           text        NOT NULL,
  dedupe_mode     text,
  dedupe_until    timestamptz,
  batch_id        bigint,
  concurrency_key text
);

-- The purger's way in: oldest first (rows arrive in that order, so inserts append).
CREATE INDEX done_jobs_finished ON {{schema}}.done_jobs (finished_at);

-- Purged rows leave done_counts as purged rows of jobs do (the same function).
CREATE TRIGGER done_jobs_count_deletes AFTER DELETE ON {{schema}}.done_jobs
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.count_deletes();

-- A TRUNCATE of either table counts what the other still holds, instead of zeroing the counts.
CREATE OR REPLACE FUNCTION {{schema}}.count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.done_counts;
  INSERT INTO {{schema}}.done_counts (kind, shard, done, cancelled)
  SELECT kind, 0, count(*) FILTER (WHERE status = 'done'), count(*) FILTER (WHERE status = 'cancelled')
  FROM (SELECT kind, status FROM {{schema}}.jobs WHERE status IN ('done', 'cancelled')
        UNION ALL SELECT kind, status FROM {{schema}}.done_jobs) f
  GROUP BY kind;
  RETURN NULL;
END;
$$;

CREATE TRIGGER done_jobs_count_truncate AFTER TRUNCATE ON {{schema}}.done_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.count_truncate();

-- Every job, wherever it is: what reads a job by id, lists jobs or reads their results.
-- A job is in one table at a time (the move is one statement).
CREATE VIEW {{schema}}.all_jobs AS
  SELECT ${columns} FROM {{schema}}.jobs
  UNION ALL
  SELECT ${columns} FROM {{schema}}.done_jobs;
`,
};
