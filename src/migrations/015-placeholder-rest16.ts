import type { Migration } from "./migration.js";

/**
 * 015: PLACEHOLDER on branch h/limits only, so that 016 (limits) applies in sequence before
 * the rest16 branch (which owns 015) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 15,
  name: "placeholder-rest16",
  sql: "SELECT 1; -- {{schema}}.",
};
