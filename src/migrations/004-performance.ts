import type { Migration } from "./migration.js";

/** 004: Vacuums the jobs table by churn rather than by size. */
export const migration: Migration = {
  version: 4,
  name: "performance",
  sql: `-- Vacuum the jobs table by churn, not by size. Every job is inserted and then updated
-- twice (claimed, finished), so a busy queue leaves dead row versions behind at the rate
-- it runs jobs, and the claim's partial index (jobs_ready) collects dead entries that each
-- claim must step over. PostgreSQL's default waits until 20 % of the table is dead: with
-- a week of done jobs retained (say 1 million rows) that is 200,000 dead versions before
-- the first vacuum. These settings vacuum after ~1 % plus 1,000 rows, analyze as often,
-- and let the vacuum run at full speed on this one table (it only ever touches pages the
-- queue recently wrote). PGlite accepts and ignores them (it has no autovacuum).
ALTER TABLE {{schema}}.jobs SET (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_vacuum_insert_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_analyze_threshold = 1000,
  autovacuum_vacuum_cost_delay = 0
);
`,
};
