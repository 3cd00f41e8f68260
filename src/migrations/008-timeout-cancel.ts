import type { Migration } from "./migration.js";

/** 008: per-job maximum run time, the `cancelled` status, and timeout/cancel counts for stats. */
export const migration: Migration = {
  version: 8,
  name: "timeout-cancel",
  sql: `-- A job's own maximum run time in ms; NULL (almost every row) = its kind's, else the
-- worker's default. Nullable without a default, so adding it rewrites no row.
ALTER TABLE {{schema}}.jobs ADD COLUMN timeout_ms integer CONSTRAINT jobs_timeout_positive CHECK (timeout_ms > 0);

-- 'cancelled': a terminal status written by cancel (src/sql/jobs.ts). A running job
-- cancelled keeps locked_by until its worker's next heartbeat sees it (and aborts the
-- handler), which clears it. NOT VALID: the old check held for every existing row, and
-- validating would scan the table under a lock that stops the workers.
ALTER TABLE {{schema}}.jobs
  DROP CONSTRAINT jobs_status_check,
  ADD CONSTRAINT jobs_status_check CHECK (status IN ('ready', 'running', 'done', 'dead', 'cancelled')) NOT VALID;

-- Attempts that ran out of time (also counted in failed) and jobs cancelled, per bucket.
ALTER TABLE {{schema}}.outcome_counts
  ADD COLUMN timed_out bigint NOT NULL DEFAULT 0,
  ADD COLUMN cancelled bigint NOT NULL DEFAULT 0;
`,
};
