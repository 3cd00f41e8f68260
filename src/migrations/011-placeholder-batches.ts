import type { Migration } from "./migration.js";

/**
 * 011: PLACEHOLDER on branch h/queues only, so that 013 (queues) applies in sequence before
 * the batches branch (which owns 011) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 11,
  name: "placeholder-batches",
  sql: "SELECT 1;",
};
