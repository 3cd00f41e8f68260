import type { Migration } from "./migration.js";

/**
 * 013: PLACEHOLDER on branch h/rest16 only, so that 015 (cancelled-retention) applies in sequence
 * before the queues branch (which owns 013) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 13,
  name: "placeholder-queues",
  sql: "-- nothing to do in {{schema}}.* until the real migration replaces this one\nSELECT 1;",
};
