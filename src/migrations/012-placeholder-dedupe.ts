import type { Migration } from "./migration.js";

/**
 * 012: PLACEHOLDER on branch h/rest16 only, so that 015 (cancelled-retention) applies in sequence
 * before the dedupe branch (which owns 012) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 12,
  name: "placeholder-dedupe",
  sql: "-- nothing to do in {{schema}}.* until the real migration replaces this one\nSELECT 1;",
};
