import type { Migration } from "./migration.js";

/** 019: the insert trigger's notification carries its transaction's start, so a worker claims jobs committed below its claim floor at once. */
export const migration: Migration = {
  version: 19,
  name: "notify-start",
  sql: `-- A job's run_at defaults to its transaction's start (now()). A worker claims from a floor
-- (the last job it claimed, src/worker/claim-floor.ts): a job committed by a transaction that
-- began before that floor lies below it, and before this migration waited for the floor's next
-- probe. The payload is that start, in epoch microseconds, so a worker lowers its floor to it
-- at once. Still one notification per inserting statement, folded within a transaction (its
-- now() does not change). Workers that predate this migration take it as a plain wake-up.
-- Replacing the function takes no lock on the jobs table.
CREATE OR REPLACE FUNCTION {{schema}}.notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('{{channel}}', floor(extract(epoch FROM now()) * 1000000)::bigint::text);
  RETURN NULL;
END;
$$;
`,
};
