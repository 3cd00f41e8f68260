import type { Migration } from "./migration.js";

/**
 * 008: a stand-in that changes nothing, so that 009 follows 008 on this branch. The
 * migration numbered 008 is written on another branch; this file goes when it lands.
 */
export const migration: Migration = {
  version: 8,
  name: "reserved",
  sql: "SELECT 1 FROM {{schema}}.migrations LIMIT 0;\n",
};
