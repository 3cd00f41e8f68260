import type { Migration } from "./migration.js";

/**
 * 022: a claim's lease record says where the claim left off, so that the other workers of
 * its queue and kinds start their next claim there (`claimFrom` in src/sql/jobs.ts).
 */
export const migration: Migration = {
  version: 22,
  name: "shared-floor",
  sql: `-- Each worker claimed from its own floor, the last job it claimed, and so read again every
-- job the other workers had claimed since (a heap visit each: 8 workers on one queue read
-- about 9 rows per job claimed, 1 worker about 1.4). A claim now also records its queue, the
-- kinds it could take and the key of its last job, and a claim from a floor starts after
-- the last job named by the newest such record of its queue, kinds and priority that lies
-- beyond its own floor. Records of heartbeats and of the keyed and limited claims leave
-- them NULL and are not used. Nullable columns: no rewrite, and workers from before this
-- migration insert their records as before.
ALTER TABLE {{schema}}.leases
  ADD COLUMN queue text,
  ADD COLUMN kinds text[],
  ADD COLUMN last_priority int,
  ADD COLUMN last_run_at timestamptz,
  ADD COLUMN last_id bigint;
`,
};
