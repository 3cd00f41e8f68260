import type { Migration } from "./migration.js";

/** 012: how long a job holds its dedupe key (its dedupe mode, and the end of a ttl). */
export const migration: Migration = {
  version: 12,
  name: "dedupe-modes",
  sql: `-- dedupe_mode: how long the job holds its dedupe_key. NULL (every row before this
-- migration, every plain-SQL insert, and the default mode 'retained'): while the row
-- exists, as before. 'queued' and 'replace': while the job is ready. 'active': while it
-- is ready or running. 'ttl': until dedupe_until. The UNIQUE (dedupe_key) constraint
-- stays as it is: a job that no longer holds its key keeps it until an enqueue of the
-- same key finds it released and sets it to NULL (see enqueue in src/sql/jobs.ts), so
-- the workers' statements never look at these columns.
-- Nullable columns without a default: adding them rewrites nothing and takes the
-- table's lock only for a moment. NOT VALID: no scan of the rows already there (all
-- NULL), see 007.
ALTER TABLE {{schema}}.jobs ADD COLUMN dedupe_mode text, ADD COLUMN dedupe_until timestamptz;
ALTER TABLE {{schema}}.jobs
  ADD CONSTRAINT jobs_dedupe_mode_check CHECK (dedupe_mode IN ('queued', 'active', 'replace', 'ttl')) NOT VALID;
`,
};
