import type { Migration } from "./migration.js";

/** 011: named queues (a job's `queue`, the ready index by queue) and paused queues and kinds. */
export const migration: Migration = {
  version: 11,
  name: "queues",
  // The claim reads one queue's ready jobs in order: the ready index leads with the queue.
  // Like jobs_ready, which it replaces (dropped once this one is built, so claims always
  // have one), it holds only ready rows (the backlog, not the done history).
  indexes: [{ name: "jobs_ready_queue", table: "jobs", columns: "(queue, priority DESC, run_at, id) WHERE status = 'ready'" }],
  retires: ["jobs_ready"],
  validates: ["jobs_queue_named"],
  sql: `-- The queue a job belongs to; workers claim from the queues they serve. A constant
-- default: adding the column rewrites no row (PostgreSQL 11+) and takes the table's lock
-- only for a moment, and a plain-SQL INSERT that names no queue lands in 'default'. Its
-- CHECK is added NOT VALID and validated after the transaction (see validates): added
-- with the column, it would read the whole table under that lock.
ALTER TABLE {{schema}}.jobs ADD COLUMN queue text NOT NULL DEFAULT 'default';
ALTER TABLE {{schema}}.jobs ADD CONSTRAINT jobs_queue_named CHECK (queue <> '') NOT VALID;

-- Paused queues and kinds: workers start none of their jobs until resumed. Read by every
-- worker at start, when a notice on the jobs channel says it changed, and by a poll.
CREATE TABLE {{schema}}.pauses (
  scope     text        NOT NULL CHECK (scope IN ('queue', 'kind')),
  name      text        NOT NULL CHECK (name <> ''),
  paused_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, name)
);
`,
};
