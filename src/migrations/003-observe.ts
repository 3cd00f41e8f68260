import type { Migration } from "./migration.js";

/** 003: Outcome and done counters for stats, kept by statement-level triggers. */
export const migration: Migration = {
  version: 3,
  name: "observe",
  sql: `-- Counters for stats that the jobs table cannot answer cheaply: outcomes per time window
-- (a retried failure leaves the job 'ready', so failures are not countable from status)
-- and the number of retained 'done' jobs (counting them would scan the whole done
-- history). Statement-level triggers with transition tables keep them: one upsert per
-- kind per statement, so the completer's batched writes cost one extra write per batch.

-- Outcomes in 10-second buckets. A backend writes to shard pg_backend_pid() % 4, so
-- workers completing the same kind at once seldom wait on each other's row. Old buckets
-- are deleted by the pruner.
CREATE TABLE {{schema}}.outcome_counts (
  bucket  timestamptz NOT NULL,
  kind    text        NOT NULL,
  shard   smallint    NOT NULL,
  done    bigint      NOT NULL DEFAULT 0,  -- running → done
  failed  bigint      NOT NULL DEFAULT 0,  -- running → ready/dead with the attempt spent (errors, lease expiries)
  died    bigint      NOT NULL DEFAULT 0,  -- → dead
  PRIMARY KEY (bucket, kind, shard)
);

-- Done jobs currently in the table, per kind (+1 on → done, −1 when a done row leaves).
CREATE TABLE {{schema}}.done_counts (
  kind   text     NOT NULL,
  shard  smallint NOT NULL,
  done   bigint   NOT NULL DEFAULT 0,
  PRIMARY KEY (kind, shard)
);

INSERT INTO {{schema}}.done_counts (kind, shard, done)
SELECT kind, 0, count(*) FROM {{schema}}.jobs WHERE status = 'done' GROUP BY kind;

CREATE FUNCTION {{schema}}.count_updates() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {{schema}}.outcome_counts AS c (bucket, kind, shard, done, failed, died)
  SELECT to_timestamp(floor(extract(epoch FROM now()) / 10) * 10), n.kind, pg_backend_pid() % 4,
         count(*) FILTER (WHERE n.status = 'done'),
         count(*) FILTER (WHERE n.status IN ('ready', 'dead') AND o.status = 'running' AND n.attempts >= o.attempts),
         count(*) FILTER (WHERE n.status = 'dead')
  FROM new_rows n JOIN old_rows o ON o.id = n.id
  WHERE n.status IS DISTINCT FROM o.status AND n.status IN ('done', 'ready', 'dead') AND o.status NOT IN ('done', 'dead')
  GROUP BY n.kind
  HAVING count(*) FILTER (WHERE n.status IN ('done', 'dead') OR (o.status = 'running' AND n.attempts >= o.attempts)) > 0
  ORDER BY n.kind
  ON CONFLICT (bucket, kind, shard) DO UPDATE
    SET done = c.done + excluded.done, failed = c.failed + excluded.failed, died = c.died + excluded.died;

  INSERT INTO {{schema}}.done_counts AS c (kind, shard, done)
  SELECT d.kind, pg_backend_pid() % 4, sum(d.delta)
  FROM (SELECT n.kind, 1 AS delta FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE n.status = 'done' AND o.status <> 'done'
        UNION ALL
        SELECT o.kind, -1 FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.status = 'done' AND n.status <> 'done') d
  GROUP BY d.kind
  ORDER BY d.kind
  ON CONFLICT (kind, shard) DO UPDATE SET done = c.done + excluded.done;
  RETURN NULL;
END;
$$;

CREATE FUNCTION {{schema}}.count_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {{schema}}.done_counts AS c (kind, shard, done)
  SELECT kind, pg_backend_pid() % 4, -count(*) FROM old_rows WHERE status = 'done'
  GROUP BY kind
  ORDER BY kind
  ON CONFLICT (kind, shard) DO UPDATE SET done = c.done + excluded.done;
  RETURN NULL;
END;
$$;

CREATE FUNCTION {{schema}}.count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.done_counts;
  RETURN NULL;
END;
$$;

CREATE TRIGGER jobs_count_updates AFTER UPDATE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.count_updates();

CREATE TRIGGER jobs_count_deletes AFTER DELETE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.count_deletes();

CREATE TRIGGER jobs_count_truncate AFTER TRUNCATE ON {{schema}}.jobs
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.count_truncate();

-- Alert incidents open now, so several alerting processes fire each incident once.
CREATE TABLE {{schema}}.alert_incidents (
  key        text        PRIMARY KEY,
  opened_at  timestamptz NOT NULL DEFAULT now(),
  message    text        NOT NULL
);
`,
};
