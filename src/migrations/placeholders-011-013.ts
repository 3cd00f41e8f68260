import type { Migration } from "./migration.js";

/**
 * 011–013: PLACEHOLDERS on branch h/outbox only, so that 014 (the outbox) applies in
 * sequence before the branches that own 011 (batches), 012 (dedupe) and 013 (queues) are
 * merged. Delete this file at merge and list the real ones.
 */
export const placeholders: readonly Migration[] = [
  { version: 11, name: "placeholder-batches", sql: "SELECT 1;" },
  { version: 12, name: "placeholder-dedupe", sql: "SELECT 1;" },
  { version: 13, name: "placeholder-queues", sql: "SELECT 1;" },
];
