import type { Migration } from "./migration.js";

/** 031: a worker's row says whether the rescuer may return its reserved jobs once the row goes stale. */
export const migration: Migration = {
  version: 31,
  name: "early-release",
  sql: `-- A worker that holds jobs reserved (claimed ahead, never started) and dies leaves them
-- waiting for their lease (5 minutes by default). A worker that writes true here starts a
-- reserved job only within 50 s of a write of its row that found the row as it left it
-- (src/worker/presence.ts), so the rescuer may return its reserved jobs once the row is
-- 60 s old, moving the row's started_at to its now() as it does: the worker's next write
-- finds the row born again and gives back what it had reserved (as it does a row deleted
-- for being a day old and written again). Workers from before this migration write nothing
-- here: their reserved jobs keep waiting for their lease. A constant default: no rewrite.
ALTER TABLE {{schema}}.workers ADD COLUMN early_release boolean NOT NULL DEFAULT false;
`,
};
