import type { Migration } from "./migration.js";

/**
 * 026: whether an insert's notice is wanted, as a function the insert trigger and errand's
 * own enqueues share: those that send their notice after the commit now send it only when
 * the trigger would have.
 */
export const migration: Migration = {
  version: 26,
  name: "notice-wanted",
  sql: `-- Migration 025 made the trigger notify only while a worker waits (or when a notice is
-- needed anyway); errand's own enqueues beside another (migration 023) still returned their
-- notice every time, and sent it after the commit, one more statement per group of inserts
-- while no worker listens for it. The condition moves into a function both read. Replacing
-- functions takes no lock on the jobs table.
-- In PL/pgSQL, which keeps its plan for the session: a SQL function with a subquery is not
-- inlined, and is planned again in each statement that calls it.
CREATE FUNCTION {{schema}}.jobs_notice_wanted() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM {{schema}}.workers WHERE waiting)
      OR current_setting('transaction_isolation') <> 'read committed'
      OR clock_timestamp() - now() > interval '100 milliseconds';
END;
$$;
CREATE OR REPLACE FUNCTION {{schema}}.notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('errand.jobs_notice', true) IS DISTINCT FROM 'after' AND {{schema}}.jobs_notice_wanted() THEN
    PERFORM pg_notify('{{channel}}', floor(extract(epoch FROM now()) * 1000000)::bigint::text);
  END IF;
  RETURN NULL;
END;
$$;
`,
};
