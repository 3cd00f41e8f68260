import type { Migration } from "./migration.js";

/** 010: a job's result (what its handler returned) and its last reported progress. */
export const migration: Migration = {
  version: 10,
  name: "results-progress",
  sql: `-- result: the JSON value a handler returned, written by the same statement that marks
-- the job done (NULL when the handler returned nothing). progress: the last value the
-- handler reported with ctx.progress(), written in the background while it runs and kept
-- after it finishes. Nullable columns without a default: adding them rewrites nothing
-- and takes the table's lock only for a moment.
ALTER TABLE {{schema}}.jobs ADD COLUMN result jsonb, ADD COLUMN progress jsonb;
`,
};
