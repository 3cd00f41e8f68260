import type { Migration } from "./migration.js";

/** 007: CHECKs on the values the worker's statements rely on (NOT VALID), and an index of unleased running rows. */
export const migration: Migration = {
  version: 7,
  name: "row-checks",
  sql: `-- Checks on the values the worker's statements rely on, so one odd row (written by plain
-- SQL, a hand edit, another tool) cannot fail a statement that writes a whole batch:
--   errors — the failure history is a JSON array (fail and rescue append to it);
--   retry  — a job's own retry policy is absent or a JSON object (the worker reads it);
--   a running job holds a lease (the rescuer finds abandoned jobs by their lease's end).
-- NOT VALID: PostgreSQL enforces them on every row inserted or updated from now on, but
-- does not scan the rows already there. Validating would read the whole table under a
-- lock that stops every worker, and one old bad row would make this migration fail and
-- leave the schema behind. The statements stay robust to such old rows instead (see
-- src/sql/jobs.ts); an operator who wants the guarantee for old rows too can run
-- \`ALTER TABLE … VALIDATE CONSTRAINT …\`, which does not block the queue.
ALTER TABLE {{schema}}.jobs
  ADD CONSTRAINT jobs_errors_array CHECK (jsonb_typeof(errors) = 'array') NOT VALID,
  ADD CONSTRAINT jobs_retry_object CHECK (retry IS NULL OR jsonb_typeof(retry) = 'object') NOT VALID,
  ADD CONSTRAINT jobs_running_leased CHECK (status <> 'running' OR locked_until IS NOT NULL) NOT VALID;

-- Running rows without a lease, written before jobs_running_leased: the rescuer returns
-- them to ready. Empty in a healthy queue, so it costs nothing to keep up, and it spares
-- the rescuer a scan of the whole table (jobs_leased holds only rows with a lease).
CREATE INDEX jobs_unleased ON {{schema}}.jobs (id) WHERE status = 'running' AND locked_until IS NULL;
`,
};
