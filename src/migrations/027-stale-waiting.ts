import type { Migration } from "./migration.js";

/**
 * 027: a worker's row that has not been refreshed for a minute no longer makes inserts
 * notify: a killed worker's row said "waiting" until a live worker deleted it a day later.
 */
export const migration: Migration = {
  version: 27,
  name: "stale-waiting",
  sql: `-- A running worker refreshes its row every 15 s (src/worker/presence.ts), and stats count it
-- live for 60 s after. A worker killed at rest left a row saying it waits, and every insert
-- notified for a day, until another worker's refresh deleted the row: each of those commits
-- queued behind the server's NOTIFY lock (migration 025) for nobody. Now only rows seen
-- within 60 s count. A live worker whose row went that long without a refresh (its process
-- stalled) claims again as it refreshes, as when it comes back to waiting, so a job whose
-- insert went unannounced meanwhile is not left for the poll. Replacing the function takes
-- no lock on the jobs table.
CREATE OR REPLACE FUNCTION {{schema}}.jobs_notice_wanted() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM {{schema}}.workers WHERE waiting AND seen_at > now() - interval '60 seconds')
      OR current_setting('transaction_isolation') <> 'read committed'
      OR clock_timestamp() - now() > interval '100 milliseconds';
END;
$$;
`,
};
