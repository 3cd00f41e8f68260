import type { Migration } from "./migration.js";

/**
 * 011: PLACEHOLDER on branch h/limits only, so that 016 (limits) applies in sequence before
 * the batches branch (which owns 011) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 11,
  name: "placeholder-batches",
  sql: "SELECT 1; -- {{schema}}.",
};
