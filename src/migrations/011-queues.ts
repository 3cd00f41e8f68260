import type { Migration } from "./migration.js";

/** 011: named queues (a job's `queue`, the ready index by queue) and paused queues and kinds. */
export const migration: Migration = {
  version: 11,
  name: "queues",
  sql: `-- The queue a job belongs to; workers claim from the queues they serve. A constant
-- default: adding the column rewrites no row (PostgreSQL 11+) and takes the table's lock
-- only for a moment, and a plain-SQL INSERT that names no queue lands in 'default'.
ALTER TABLE {{schema}}.jobs ADD COLUMN queue text NOT NULL DEFAULT 'default'
  CONSTRAINT jobs_queue_named CHECK (queue <> '');

-- The claim reads one queue's ready jobs in order: the ready index leads with the queue.
-- Like jobs_ready, which it replaces, it holds only ready rows (the backlog, not the done
-- history). Building it reads the table once under a lock that holds up enqueues and
-- claims for as long as that takes (a second or two per million rows). With a large
-- backlog, create it beforehand without blocking the queue, and this step finds it:
--   CREATE INDEX CONCURRENTLY jobs_ready_queue ON <schema>.jobs (queue, priority DESC, run_at, id) WHERE status = 'ready';
CREATE INDEX IF NOT EXISTS jobs_ready_queue ON {{schema}}.jobs (queue, priority DESC, run_at, id) WHERE status = 'ready';
DROP INDEX {{schema}}.jobs_ready;

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
