import type { Migration } from "./migration.js";

/**
 * 014: PLACEHOLDER on branch h/limits only, so that 016 (limits) applies in sequence before
 * the outbox branch (which owns 014) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 14,
  name: "placeholder-outbox",
  sql: "SELECT 1; -- {{schema}}.",
};
