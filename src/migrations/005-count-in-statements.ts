import type { Migration } from "./migration.js";

/** 005: Outcome counters move from the UPDATE trigger into the statements that finish attempts. */
export const migration: Migration = {
  version: 5,
  name: "count-in-statements",
  sql: `-- Outcome counters move from a trigger into the statements that finish attempts.
-- The statement-level AFTER UPDATE trigger of 003 also ran for every claim and every
-- heartbeat, copying each touched row (payload included) into transition tables: about
-- a third of the worker's throughput on PostgreSQL (11 k/s with it, 17 k/s without, in
-- one run). complete, fail and rescue (src/sql/jobs.ts) now upsert the same counters
-- themselves. Deletes and truncation keep their triggers: the pruner's batches are rare.
DROP TRIGGER jobs_count_updates ON {{schema}}.jobs;
DROP FUNCTION {{schema}}.count_updates();
`,
};
