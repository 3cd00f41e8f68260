import { type ClaimVariant, leasedClaim } from "./016-limits.js";
import type { Migration } from "./migration.js";

/** 017: a global concurrency limit per queue and the limited claim that enforces it; the registry of live workers. */
export const migration: Migration = {
  version: 17,
  name: "queue-limits",
  sql: `-- At most \`concurrency\` jobs of a queue running at once, across every worker. A new, small
-- table and a function: nothing on the jobs table changes, so no lock is taken on it.
CREATE TABLE {{schema}}.queue_limits (
  queue       text        PRIMARY KEY CHECK (queue <> ''),
  concurrency int         NOT NULL CHECK (concurrency >= 1),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Live workers: what each serves (its queues and the kinds it has handlers for), so stats can
-- name ready jobs no live worker would ever claim (a mistyped kind waits forever otherwise).
-- Written at a worker's start and every 15 s, deleted at its stop; a row not seen for a
-- minute is a dead worker's (rows older than a day are deleted by the next start or refresh).
CREATE TABLE {{schema}}.workers (
  id         text        PRIMARY KEY,
  queues     text[]      NOT NULL,
  kinds      text[]      NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  seen_at    timestamptz NOT NULL DEFAULT now()
);

${claimLimited("CREATE FUNCTION", { running: "r.locked_until IS NOT NULL AND r.status = 'running' AND r.queue = p_queue", ready: "r.status = 'ready'", leases: false })}`,
};

/**
 * claim_limited's definition, made by `create` (CREATE FUNCTION, or CREATE OR REPLACE
 * FUNCTION): `variant.running` is the condition on `r` of the queue's running jobs (017:
 * its leased rows; 021: the rows whose queue_running names it), the rest as claim_keyed's.
 */
export function claimLimited(create: string, variant: Omit<ClaimVariant, "startedAt">): string {
  const update = `UPDATE {{schema}}.jobs j
      SET status = 'running', attempts = j.attempts + 1, locked_by = p_worker,
          locked_until = now() + coalesce((p_leases ->> j.kind)::float8, p_lease_ms) * interval '1 millisecond',
          started_at = now()${variant.leases ? ", queue_running = p_queue" : ""}
      WHERE j.ctid = ANY(ARRAY(SELECT ctid FROM next))`;
  return `-- claim_limited: the claim of a queue with a limit (workers of an unlimited queue never call
-- it). Claims of the queue are serialised by a transaction-level advisory lock; under it the
-- queue's running jobs are counted (through jobs_leased: only leased rows are read, never the
-- history), and at most limit - running jobs are taken, all started now (a job reserved in a
-- worker's buffer would hold a place without running): keyed jobs first, by claim_keyed with
-- the room left (their keys' limits apply too), then unkeyed jobs as the plain claim takes them.
-- Rows: as claim_keyed's (the closing row with id NULL included).
${create} {{schema}}.claim_limited(p_slots int, p_worker text, p_leases jsonb, p_lease_ms float8, p_after text, p_queue text, p_kinds text[])
RETURNS TABLE (id bigint, kind text, payload jsonb, attempts int, started boolean, max_attempts int, retry text,
               timeout_ms int, run_at_ms float8, created_at_ms float8, checkpoint text, concurrency_key text, wait_ms float8${variant.leases ? ", lease bigint" : ""})
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  room int := p_slots;
  lim int;
  n int;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('errand.queue:{{schema}}'), hashtext(p_queue));
  lim := (SELECT l.concurrency FROM {{schema}}.queue_limits l WHERE l.queue = p_queue);
  IF lim IS NOT NULL THEN
    room := least(room, lim - (SELECT count(*) FROM {{schema}}.jobs r
                               WHERE ${variant.running})::int);
  END IF;
  IF room <= 0 THEN
    RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::jsonb, NULL::int, NULL::boolean, NULL::int, NULL::text, NULL::int,
                        NULL::float8, NULL::float8, NULL::text, p_after, NULL::float8${variant.leases ? ", NULL::bigint" : ""};
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM {{schema}}.claim_keyed(room, p_worker, p_leases, p_lease_ms, p_after, p_queue, p_kinds);
  GET DIAGNOSTICS n = ROW_COUNT;
  room := room - (n - 1);
  IF room > 0 THEN
    RETURN QUERY
      WITH next AS (
        SELECT r.ctid FROM {{schema}}.jobs r
        WHERE ${variant.ready} AND r.queue = p_queue AND r.concurrency_key IS NULL AND r.run_at <= now() AND r.kind = ANY(p_kinds)
        ORDER BY r.priority DESC, r.run_at, r.id
        LIMIT room
        FOR UPDATE SKIP LOCKED
      )${variant.leases ? leasedClaim(update, "NULL::text") : `
      ${update}
      RETURNING j.id, j.kind, j.payload, j.attempts, true, j.max_attempts, j.retry::text, j.timeout_ms,
                (extract(epoch FROM j.run_at) * 1000)::float8, (extract(epoch FROM j.created_at) * 1000)::float8,
                j.checkpoint::text, NULL::text, NULL::float8`};
  END IF;
END;
$$;
`;
}
