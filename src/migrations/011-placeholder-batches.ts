import type { Migration } from "./migration.js";

/**
 * 011: PLACEHOLDER on branch h/dedupe only, so that 012 (dedupe modes) applies in sequence
 * before the batches branch (which owns 011) is merged. Delete this file at merge and list the real one.
 */
export const migration: Migration = {
  version: 11,
  name: "placeholder-batches",
  sql: "SELECT FROM {{schema}}.jobs WHERE false;",
};
