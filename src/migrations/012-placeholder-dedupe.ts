import type { Migration } from "./migration.js";

/**
 * 012: PLACEHOLDER on branch h/limits only, so that 016 (limits) applies in sequence before
 * the dedupe branch (which owns 012) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 12,
  name: "placeholder-dedupe",
  sql: "SELECT 1; -- {{schema}}.",
};
