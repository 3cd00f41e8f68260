import type { Migration } from "./migration.js";

/**
 * 029: the ready mark's trigger fires for every writer, replication's too, and a writer
 * outside READ COMMITTED keeps one lowering row per queue and priority, not one per job.
 */
export const migration: Migration = {
  version: 29,
  name: "ready-mark-always",
  sql: `-- A trigger fires only where session_replication_role is 'origin' unless enabled ALWAYS: not
-- for the rows logical replication's apply workers write, nor for a bulk load that set the
-- role to 'replica' to skip foreign keys and triggers. A job written ready below a mark
-- there (a past run_at) did not lower it, and the claim floor's probe, which reads the
-- floor's priority from the mark (migration 028), never found it. Firing where the origin's
-- trigger fired too only adds a lowering row: a mark lower than it could be costs a longer
-- look, never a job.
ALTER TABLE {{schema}}.jobs ENABLE ALWAYS TRIGGER jobs_ready_mark;
-- Outside READ COMMITTED a transaction's snapshot may predate a raise, so it cannot judge
-- the rows it sees, and 028 added a row per job: a bulk insert of past rows at REPEATABLE
-- READ, one per row. A row of its own is another matter: no raise removed it, since the
-- transaction holds the mark's lock, shared, from its first such row to its commit. So it
-- now keeps one row per queue and priority (its xmin the transaction's own id; a
-- subtransaction's rows have their own, and count as others'), lowered as its jobs need.
CREATE OR REPLACE FUNCTION {{schema}}.lower_ready_mark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtext('errand.ready_mark:{{schema}}'), 0);
  IF current_setting('transaction_isolation') = 'read committed' THEN
    IF EXISTS (SELECT 1 FROM {{schema}}.ready_marks WHERE queue = NEW.queue AND priority = NEW.priority AND raised)
       AND NOT EXISTS (SELECT 1 FROM {{schema}}.ready_marks WHERE queue = NEW.queue AND priority = NEW.priority AND run_at <= NEW.run_at) THEN
      INSERT INTO {{schema}}.ready_marks (queue, priority, run_at, raised) VALUES (NEW.queue, NEW.priority, NEW.run_at, false);
    END IF;
  ELSIF NOT EXISTS (SELECT 1 FROM {{schema}}.ready_marks m WHERE m.queue = NEW.queue AND m.priority = NEW.priority AND NOT m.raised
                      AND m.xmin = pg_current_xact_id()::xid AND m.run_at <= NEW.run_at) THEN
    UPDATE {{schema}}.ready_marks m SET run_at = NEW.run_at
      WHERE m.queue = NEW.queue AND m.priority = NEW.priority AND NOT m.raised AND m.xmin = pg_current_xact_id()::xid;
    IF NOT FOUND THEN
      INSERT INTO {{schema}}.ready_marks (queue, priority, run_at, raised) VALUES (NEW.queue, NEW.priority, NEW.run_at, false);
    END IF;
  END IF;
  RETURN NULL;
END;
$$;
`,
};
