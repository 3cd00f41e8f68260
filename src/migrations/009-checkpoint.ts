import type { Migration } from "./migration.js";

/** 009: A job's checkpoint, the JSON state its handler saved for the next attempt. */
export const migration: Migration = {
  version: 9,
  name: "checkpoint",
  sql: `-- A job's checkpoint: the small JSON state its handler saved with ctx.checkpoint(), given
-- to the next attempt as ctx.lastCheckpoint so a long job resumes instead of restarting.
-- Nullable without a default: adding it rewrites no row, and a job that never
-- checkpoints stores nothing (a NULL is a bit in the row's null bitmap).
ALTER TABLE {{schema}}.jobs ADD COLUMN checkpoint jsonb;
`,
};
