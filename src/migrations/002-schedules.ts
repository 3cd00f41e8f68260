import type { Migration } from "./migration.js";

/** 002: Recurring schedules and the record of each slot they enqueued. */
export const migration: Migration = {
  version: 2,
  name: "schedules",
  sql: `-- Recurring schedules. The scheduler only enqueues: each due slot becomes a normal job
-- (dedupe_key 'schedule:<name>:<slot ISO>'), so it gets the usual retries, dead letters
-- and visibility. A slot is enqueued once even with many schedulers: each one locks the
-- schedule's row (FOR UPDATE SKIP LOCKED), re-checks next_slot, and advances it in the
-- same transaction; schedule_runs' primary key and the jobs' dedupe_key back that up.

CREATE TABLE {{schema}}.schedules (
  name               text        PRIMARY KEY CHECK (name <> ''),
  cron               text        NOT NULL,
  timezone           text        NOT NULL DEFAULT 'UTC',
  kind               text        NOT NULL CHECK (kind <> ''),
  payload            jsonb       NOT NULL DEFAULT '{}',
  -- maxAttempts, priority, retry for the jobs this schedule enqueues
  job_options        jsonb       NOT NULL DEFAULT '{}',
  overlap            text        NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip', 'allow')),
  missed             text        NOT NULL DEFAULT 'skip' CHECK (missed IN ('skip', 'latest', 'catch_up')),
  catch_up_limit     int         NOT NULL DEFAULT 10 CHECK (catch_up_limit >= 1),
  -- a slot enqueued later than this after its time counts as missed
  grace_ms           bigint      NOT NULL DEFAULT 60000 CHECK (grace_ms >= 0),
  paused             boolean     NOT NULL DEFAULT false,
  -- the next slot not yet handled (computed from the last handled slot); null = none left
  next_slot          timestamptz,
  -- the latest slot handled (enqueued or skipped)
  last_slot          timestamptz,
  last_enqueued_slot timestamptz,
  last_job_id        bigint,
  last_success_slot  timestamptz,
  last_success_at    timestamptz,
  last_success_job_id bigint,
  last_skipped_slot  timestamptz,
  last_skip_reason   text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);

-- The scheduler's tick: due, unpaused schedules by slot.
CREATE INDEX schedules_due ON {{schema}}.schedules (next_slot) WHERE NOT paused;

-- One row per slot handled: the job it became, or why it was skipped. (schedule, slot)
-- is unique, so no slot is recorded — or enqueued — twice. The scheduler prunes rows a
-- week old whose job is no longer ready or running.
CREATE TABLE {{schema}}.schedule_runs (
  schedule    text        NOT NULL REFERENCES {{schema}}.schedules (name) ON DELETE CASCADE,
  slot        timestamptz NOT NULL,
  job_id      bigint,
  skipped     text,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (schedule, slot),
  CHECK ((job_id IS NULL) <> (skipped IS NULL))
);
`,
};
