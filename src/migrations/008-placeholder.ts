import type { Migration } from "./migration.js";

/**
 * 008: stands in for the migration another branch adds as 008, so that 010 applies on
 * this branch (versions must be 1…n without gaps). Delete it when merging that branch.
 */
export const migration: Migration = {
  version: 8,
  name: "placeholder-8",
  sql: "SELECT FROM {{schema}}.jobs LIMIT 0;",
};
