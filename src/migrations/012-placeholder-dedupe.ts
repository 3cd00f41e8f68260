import type { Migration } from "./migration.js";

/**
 * 012: PLACEHOLDER on branch h/queues only, so that 013 (queues) applies in sequence before
 * the dedupe branch (which owns 012) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 12,
  name: "placeholder-dedupe",
  sql: "SELECT 1;",
};
