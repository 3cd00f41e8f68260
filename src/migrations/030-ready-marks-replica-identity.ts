import type { Migration } from "./migration.js";

/** 030: ready_marks gets a replica identity, so that raises work where its schema is published. */
export const migration: Migration = {
  version: 30,
  name: "ready-marks-replica-identity",
  sql: `-- Every other table of errand's has a primary key, PostgreSQL's default replica identity;
-- ready_marks (migration 028) has none, and its rows are not unique. Where a publication
-- covers it (FOR ALL TABLES, FOR TABLES IN SCHEMA: change data capture, a logical replica),
-- PostgreSQL refuses its UPDATEs and DELETEs ("does not have a replica identity and
-- publishes deletes"), so every raise of a mark failed and the claim floor's probe with it.
-- FULL logs the whole old row, and only where wal_level is logical.
ALTER TABLE {{schema}}.ready_marks REPLICA IDENTITY FULL;
`,
};
