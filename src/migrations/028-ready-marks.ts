import type { Migration } from "./migration.js";

/**
 * 028: a mark per queue and priority below which no job is ready, so that the claim floor's
 * probe starts there instead of at the start of the index of open jobs (`raise_ready_mark`).
 */
export const migration: Migration = {
  version: 28,
  name: "ready-marks",
  sql: `-- Every job that leaves 'ready' leaves a dead entry in jobs_open_plain until VACUUM removes
-- it, at the front of its queue and priority. The claim floor's probe (src/worker/claim-floor.ts)
-- looked from the start of that range, through all of them: on a table autovacuum never got
-- to, 10,000,000 entries, an index larger than shared_buffers read whole (0.64 s the first
-- time, 0.24 s each time after) per probe, one every 10 s per worker process.
--
-- ready_marks holds, per queue and priority, a time no ready job of them lies below: the
-- smallest run_at of the rows of that queue and priority, when one of them is raised (a
-- mark); without a mark, none (the probe looks from the start). A probe raises the mark
-- (raise_ready_mark) to the first ready job's run_at, of any kind, paused or not, but never
-- above the start of a transaction in flight nor above its own start, less the claim's
-- slack (100 ms, claimFloorSlackMs): a row is written ready with a run_at no earlier than
-- its transaction's start, unless given one (a run_at in the past, a job given back or
-- retried by hand with its old run_at). Such a row makes its transaction hold the mark's
-- lock, shared, which no raise gets while it is held, and add a row with its run_at
-- (lower_ready_mark) unless, under READ COMMITTED, one as low is there: it commits with
-- the job. A transaction of another isolation level always adds one (its snapshot may
-- predate a raise, and it only inserts, which never conflicts).
-- The time of a transaction in flight is read from pg_stat_activity: where some sessions'
-- are hidden from errand's role (neither the same role nor pg_read_all_stats), or a prepared
-- transaction waits, nothing is raised. A mark later than now() (the server's clock went
-- back) counts as none, and the next raise replaces it.
CREATE TABLE {{schema}}.ready_marks (
  queue text NOT NULL,
  priority int NOT NULL,
  run_at timestamptz NOT NULL,
  raised boolean NOT NULL
);
-- Not on run_at: a raise rewrites its row in place (HOT), so that the table and its index do
-- not grow between VACUUMs by a row per probe.
CREATE INDEX ready_marks_of ON {{schema}}.ready_marks (queue, priority);
CREATE FUNCTION {{schema}}.lower_ready_mark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtext('errand.ready_mark:{{schema}}'), 0);
  IF current_setting('transaction_isolation') <> 'read committed'
     OR (EXISTS (SELECT 1 FROM {{schema}}.ready_marks WHERE queue = NEW.queue AND priority = NEW.priority AND raised)
         AND NOT EXISTS (SELECT 1 FROM {{schema}}.ready_marks WHERE queue = NEW.queue AND priority = NEW.priority AND run_at <= NEW.run_at)) THEN
    INSERT INTO {{schema}}.ready_marks (queue, priority, run_at, raised) VALUES (NEW.queue, NEW.priority, NEW.run_at, false);
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER jobs_ready_mark AFTER INSERT OR UPDATE ON {{schema}}.jobs FOR EACH ROW
  WHEN (NEW.status = 'ready' AND NEW.outcome IS NULL AND NEW.concurrency_key IS NULL AND NEW.run_at < now())
  EXECUTE FUNCTION {{schema}}.lower_ready_mark();
-- The mark of a queue and priority (NULL: none), in the snapshot of the statement that calls it.
CREATE FUNCTION {{schema}}.ready_mark(p_queue text, p_priority int) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN bool_or(m.raised) AND min(m.run_at) <= now() THEN min(m.run_at) END
  FROM {{schema}}.ready_marks m WHERE m.queue = p_queue AND m.priority = p_priority
$$;
-- Raises the mark of queue p_queue and priority p_priority, when it can without waiting, before
-- the claim floor's probe reads from it (firstReady in src/sql/jobs.ts).
CREATE FUNCTION {{schema}}.raise_ready_mark(p_queue text, p_priority int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_hidden boolean;
  v_bound timestamptz;
  v_mark timestamptz;
  v_first timestamptz;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('errand.ready_mark:{{schema}}'), 0)
     OR EXISTS (SELECT 1 FROM pg_prepared_xacts WHERE database = current_database()) THEN
    RETURN;
  END IF;
  -- Read before the jobs are (a later statement, a later snapshot): a transaction in flight
  -- then is listed, and one that begins after it begins after now(). Autovacuum writes no job.
  SELECT coalesce(bool_or(a.state IS NULL), false), min(a.xact_start) INTO v_hidden, v_bound
    FROM pg_stat_activity a WHERE a.datname = current_database() AND a.backend_type IS DISTINCT FROM 'autovacuum worker'; -- a hidden session's is NULL
  IF v_hidden THEN
    RETURN;
  END IF;
  v_mark := {{schema}}.ready_mark(p_queue, p_priority);
  SELECT j.run_at INTO v_first FROM {{schema}}.jobs j
    WHERE j.status = 'ready' AND j.outcome IS NULL AND j.queue = p_queue AND j.concurrency_key IS NULL
      AND j.priority = p_priority AND j.run_at >= coalesce(v_mark, '-infinity')
    ORDER BY j.run_at LIMIT 1;
  v_bound := least(least(v_bound, now()) - interval '100 milliseconds', v_first);
  IF v_mark IS NULL OR v_bound > v_mark THEN
    PERFORM set_config('synchronous_commit', 'off', true); -- a raise lost in a crash leaves the mark lower
    DELETE FROM {{schema}}.ready_marks m WHERE m.queue = p_queue AND m.priority = p_priority AND NOT m.raised;
    UPDATE {{schema}}.ready_marks m SET run_at = v_bound WHERE m.queue = p_queue AND m.priority = p_priority AND m.raised;
    IF NOT FOUND THEN
      INSERT INTO {{schema}}.ready_marks (queue, priority, run_at, raised) VALUES (p_queue, p_priority, v_bound, true);
    END IF;
  END IF;
END;
$$;
`,
};
