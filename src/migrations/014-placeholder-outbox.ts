import type { Migration } from "./migration.js";

/**
 * 014: PLACEHOLDER on branch h/rest16 only, so that 015 (cancelled-retention) applies in sequence
 * before the outbox branch (which owns 014) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 14,
  name: "placeholder-outbox",
  sql: "-- nothing to do in {{schema}}.* until the real migration replaces this one\nSELECT 1;",
};
