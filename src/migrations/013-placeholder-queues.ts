import type { Migration } from "./migration.js";

/**
 * 013: PLACEHOLDER on branch h/limits only, so that 016 (limits) applies in sequence before
 * the queues branch (which owns 013) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 13,
  name: "placeholder-queues",
  sql: "SELECT 1; -- {{schema}}.",
};
