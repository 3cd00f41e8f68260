import type { Migration } from "./migration.js";

/**
 * 011: PLACEHOLDER on branch h/rest16 only, so that 015 (cancelled-retention) applies in sequence
 * before the batches branch (which owns 011) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 11,
  name: "placeholder-batches",
  sql: "-- nothing to do in {{schema}}.* until the real migration replaces this one\nSELECT 1;",
};
