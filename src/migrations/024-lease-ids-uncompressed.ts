import type { Migration } from "./migration.js";

/**
 * 024: a lease record's ids are stored out of line without compression (the claim's
 * record of a batch of more than about 250 jobs is past the size PostgreSQL compresses at).
 */
export const migration: Migration = {
  version: 24,
  name: "lease-ids-uncompressed",
  sql: `-- A claim of 2,000 jobs records 16 kB of ids, which PostgreSQL compressed with pglz
-- before storing it out of line: 1.32 ms per record against 0.43 ms stored as it is (one
-- backend; bench/README, round of 2026-12-04, night), on every claim and heartbeat, for a
-- column that only the rescuer reads, and only for records that are due.
-- Rows already written keep their compressed values and read as before. A catalog change:
-- it waits for the claims in flight and holds the table's lock for no longer.
ALTER TABLE {{schema}}.leases ALTER COLUMN ids SET STORAGE EXTERNAL;
`,
};
