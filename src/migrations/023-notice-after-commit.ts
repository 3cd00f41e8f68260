import type { Migration } from "./migration.js";

/**
 * 023: an enqueue on errand's own connection sends the workers' notice once its insert has
 * committed, in a statement of its own, instead of the insert trigger sending it at commit.
 */
export const migration: Migration = {
  version: 23,
  name: "notice-after-commit",
  sql: `-- A transaction that notifies takes, as it commits, a lock the whole server shares and
-- holds it through its WAL flush, so notifying transactions commit one at a time instead of
-- sharing flushes (bench/README, round of 2026-12-04). A transaction that only notifies
-- writes no WAL and does not wait for a flush. So errand's own enqueue statements set
-- errand.jobs_notice to 'after' for their transaction, the trigger then stays silent, and
-- errand sends the same notice after the commit. Inserts in a caller's transaction and by
-- plain SQL notify as before. Replacing the function takes no lock on the jobs table.
CREATE OR REPLACE FUNCTION {{schema}}.notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('errand.jobs_notice', true) IS DISTINCT FROM 'after' THEN
    PERFORM pg_notify('{{channel}}', floor(extract(epoch FROM now()) * 1000000)::bigint::text);
  END IF;
  RETURN NULL;
END;
$$;
`,
};
