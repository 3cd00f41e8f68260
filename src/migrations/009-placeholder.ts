import type { Migration } from "./migration.js";

/**
 * 009: stands in for the migration another branch adds as 009, so that 010 applies on
 * this branch (versions must be 1…n without gaps). Delete it when merging that branch.
 */
export const migration: Migration = {
  version: 9,
  name: "placeholder-9",
  sql: "SELECT FROM {{schema}}.jobs LIMIT 0;",
};
