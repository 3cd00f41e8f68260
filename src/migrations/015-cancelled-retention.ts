import type { Migration } from "./migration.js";

/** 015: cancelled jobs are purged like done ones (an index to find them by age) and counted like them (done_counts.cancelled). */
export const migration: Migration = {
  version: 15,
  name: "cancelled-retention",
  // The purger deletes cancelled jobs past the retention as it deletes done ones, oldest
  // first: this index is how it finds them without reading the table (jobs_done does the
  // same for done rows). A separate index rather than widening jobs_done to status IN
  // ('done', 'cancelled'): widening would rebuild the largest index of the table (every
  // retained done job). This one holds cancelled rows only, few in most queues.
  indexes: [{ name: "jobs_cancelled", table: "jobs", columns: "(finished_at) WHERE status = 'cancelled'" }],
  sql: `-- Cancelled jobs still in the table, per kind, for stats: kept like the done count, so
-- stats never counts the cancelled history row by row (a cancel by kind may leave
-- millions). The cancel statement adds to it; the delete trigger subtracts.
-- Counted before done_counts is altered: the count reads the whole table (jobs_cancelled
-- is built after this transaction), and done_counts, once locked, would hold up every
-- completion that writes it until the transaction ends.
CREATE TEMPORARY TABLE cancelled_counts ON COMMIT DROP AS
SELECT kind, count(*) AS n FROM {{schema}}.jobs WHERE status = 'cancelled' GROUP BY kind;

ALTER TABLE {{schema}}.done_counts ADD COLUMN cancelled bigint NOT NULL DEFAULT 0;

INSERT INTO {{schema}}.done_counts AS c (kind, shard, cancelled)
SELECT kind, 0, n FROM cancelled_counts
ON CONFLICT (kind, shard) DO UPDATE SET cancelled = c.cancelled + excluded.cancelled;

CREATE OR REPLACE FUNCTION {{schema}}.count_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {{schema}}.done_counts AS c (kind, shard, done, cancelled)
  SELECT kind, pg_backend_pid() % 4, -count(*) FILTER (WHERE status = 'done'), -count(*) FILTER (WHERE status = 'cancelled')
  FROM old_rows WHERE status IN ('done', 'cancelled')
  GROUP BY kind
  ORDER BY kind
  ON CONFLICT (kind, shard) DO UPDATE SET done = c.done + excluded.done, cancelled = c.cancelled + excluded.cancelled;
  RETURN NULL;
END;
$$;
`,
};
