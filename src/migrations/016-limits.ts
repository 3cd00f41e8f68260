import type { Migration } from "./migration.js";

/** 016: concurrency keys, their limits (concurrency, rate) and the keyed claim that enforces them fairly. */
export const migration: Migration = {
  version: 16,
  name: "limits",
  indexes: [
    // The plain claim's index holds only unkeyed ready rows, so a backlog of keyed jobs
    // (held back by their limits) is never scanned by it. It replaces jobs_ready_queue
    // (011), dropped once this one is built; an upgrade from before 011 builds only this one.
    { name: "jobs_ready_plain", table: "jobs", columns: "(queue, priority DESC, run_at, id) WHERE status = 'ready' AND concurrency_key IS NULL" },
    // The keyed claim: ready keys in order (a loose index scan finds the next key), and each
    // key's ready jobs in claim order. Empty unless keys are used.
    { name: "jobs_ready_keyed", table: "jobs", columns: "(queue, concurrency_key, priority DESC, run_at, id) WHERE status = 'ready' AND concurrency_key IS NOT NULL" },
    // A key's running jobs (its concurrency) and its recent starts (its rate): counted from
    // the jobs themselves, so a crash leaves no counter to repair (the rescuer puts an expired
    // lease back to ready, and it stops counting).
    // (started_at IS NOT NULL: a ready job that never started is not in it, so the reads of ready
    // rows, which do not imply it, cannot pick this index over jobs_ready_keyed.)
    { name: "jobs_keyed_started", table: "jobs", columns: "(concurrency_key, started_at) WHERE concurrency_key IS NOT NULL AND started_at IS NOT NULL" },
    { name: "jobs_keyed_running", table: "jobs", columns: "(concurrency_key) WHERE status = 'running' AND concurrency_key IS NOT NULL" },
  ],
  retires: ["jobs_ready_queue"],
  validates: ["jobs_concurrency_key_named"],
  sql: `-- A job's concurrency key ('tenant:42'): its limits, and its turn in the round-robin.
-- Nullable without a default: adding it rewrites nothing and takes the table's lock only
-- for a moment. NULL (almost every job) = no key: the plain claim takes it. Its CHECK is
-- validated after the transaction (see validates), as 011's.
ALTER TABLE {{schema}}.jobs ADD COLUMN concurrency_key text;
ALTER TABLE {{schema}}.jobs ADD CONSTRAINT jobs_concurrency_key_named CHECK (concurrency_key <> '') NOT VALID;

-- Limits by key: an exact key ('tenant:42'), or a prefix ending in '*' ('tenant:*') whose
-- numbers apply to each matching key on its own. The exact key wins, then the longest prefix.
-- concurrency: at most this many of the key's jobs running at once. rate_count per
-- rate_period_ms: at most this many starts in any window of that length.
CREATE TABLE {{schema}}.limits (
  key            text        PRIMARY KEY CHECK (key <> ''),
  concurrency    int         CHECK (concurrency >= 1),
  rate_count     int         CHECK (rate_count >= 1),
  rate_period_ms int         CHECK (rate_period_ms >= 1),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  CHECK ((rate_count IS NULL) = (rate_period_ms IS NULL))
);

${claimKeyed("CREATE FUNCTION", { running: "r.concurrency_key = k AND r.status = 'running'", startedAt: "started_at", ready: "r.status = 'ready'", leases: false })}`,
};

/**
 * What differs between claim_keyed's versions: how it counts a key's running jobs (a
 * condition on `r` and the key `k`) and its recent starts (the column of their start
 * times), how it tells a ready row (a condition on `r`), and whether its claims write a
 * lease record (see {@link leasedClaim}). 016 counted by status and started_at; 020 by the
 * columns that mirror them for keyed jobs alone; 021 reads ready rows through the open
 * indexes and records leases.
 */
export interface ClaimVariant {
  readonly running: string;
  readonly startedAt: string;
  readonly ready: string;
  readonly leases: boolean;
}

/**
 * A claim's UPDATE of `jobs j` (`update`: from UPDATE to its WHERE, the rows in CTE
 * `next`) that records the claim in `leases` (migration 021): one row for the batch, its
 * earliest lease and its ids, whose id every returned row carries as its last column. The
 * rows are claim_keyed's, their concurrency key `key` (an expression on `j`).
 */
export function leasedClaim(update: string, key: string): string {
  const columns = ["j.id AS id", "j.kind AS kind", "j.payload AS payload", "j.attempts AS attempts", "true AS started", "j.max_attempts AS max_attempts",
    "j.retry::text AS retry", "j.timeout_ms AS timeout_ms", "(extract(epoch FROM j.run_at) * 1000)::float8 AS run_at_ms",
    "(extract(epoch FROM j.created_at) * 1000)::float8 AS created_at_ms", "j.checkpoint::text AS checkpoint", `${key} AS concurrency_key`, "NULL::float8 AS wait_ms"];
  const names = columns.map((column) => column.slice(column.lastIndexOf(" AS ") + 4));
  return `, claimed AS (
        ${update}
        RETURNING ${columns.join(", ")}, j.locked_until AS lease_until
      ), lease AS (
        INSERT INTO {{schema}}.leases (worker, locked_until, ids)
        SELECT p_worker, min(c.lease_until), array_agg(c.id) FROM claimed c HAVING count(*) > 0
        RETURNING leases.id
      )
      SELECT ${names.map((name) => `c.${name}`).join(", ")}, (SELECT l.id FROM lease l) FROM claimed c`;
}

/** claim_keyed's definition, made by `create` (CREATE FUNCTION, or CREATE OR REPLACE FUNCTION), as `counts` says. */
export function claimKeyed(create: string, counts: ClaimVariant): string {
  const update = `UPDATE {{schema}}.jobs j
      SET status = 'running', attempts = j.attempts + 1, locked_by = p_worker,
          locked_until = t + coalesce((p_leases ->> j.kind)::float8, p_lease_ms) * interval '1 millisecond',
          started_at = t${counts.leases ? ", queue_running = p_queue" : ""}
      WHERE j.ctid = ANY(ARRAY(SELECT ctid FROM next))`;
  return `-- claim_keyed: up to p_slots keyed jobs, all started now (no reserved rows: a job held in a
-- worker's buffer would hold its key's slot without running), for worker p_worker with the
-- lease p_lease_ms (or its kind's in p_leases). Keys are visited round-robin in key order,
-- starting after p_after (the last key this worker visited), one job per key in the first pass
-- and an even share of what is left in the next ones, until
-- the slots are filled or a whole pass took nothing (or 1,000 visits). A key another claim is
-- visiting (its transaction-level advisory lock is held) is skipped; under the lock, its
-- running jobs and its starts in the last rate period are counted from the jobs table.
-- Rows: the claimed jobs (the plain claim's columns), then one row with id NULL whose
-- concurrency_key is the last key visited and wait_ms the time until a rate limit next lets
-- a held-back job start (NULL: none is waiting on a rate).
-- Only jobs of queue p_queue whose kind is one of p_kinds (the worker's handled, unpaused
-- kinds), as in the plain claim; a key's running jobs and starts count in every queue.
${create} {{schema}}.claim_keyed(p_slots int, p_worker text, p_leases jsonb, p_lease_ms float8, p_after text, p_queue text, p_kinds text[])
RETURNS TABLE (id bigint, kind text, payload jsonb, attempts int, started boolean, max_attempts int, retry text,
               timeout_ms int, run_at_ms float8, created_at_ms float8, checkpoint text, concurrency_key text, wait_ms float8${counts.leases ? ", lease bigint" : ""})
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  k text;
  last_key text := p_after;
  pass_first text;
  wrapped boolean;
  lim record;
  room int;
  n int;
  taken int := 0;
  took_in_pass int := 0;
  keys_took int := 0;
  quantum int := 1;
  visits int := 0;
  t timestamptz;
  oldest timestamptz;
  wait float8;
BEGIN
  WHILE taken < p_slots AND visits < 1000 LOOP
    -- (Two statements, not \`last_key IS NULL OR …\`: with the OR, the plan could not start
    -- the index scan at last_key and read the index from its beginning.)
    IF last_key IS NULL THEN
      k := NULL;
    ELSE
      k := (SELECT min(r.concurrency_key) FROM {{schema}}.jobs r
            WHERE ${counts.ready} AND r.queue = p_queue AND r.concurrency_key IS NOT NULL AND r.concurrency_key > last_key
              AND r.kind = ANY(p_kinds));
    END IF;
    wrapped := k IS NULL;
    IF wrapped THEN
      k := (SELECT min(r.concurrency_key) FROM {{schema}}.jobs r
            WHERE ${counts.ready} AND r.queue = p_queue AND r.concurrency_key IS NOT NULL AND r.kind = ANY(p_kinds));
      EXIT WHEN k IS NULL;
    END IF;
    -- A pass ends where the circle of keys comes back to where it began (that key may be
    -- gone: its last job was taken).
    IF pass_first IS NULL THEN
      pass_first := k;
    ELSIF (wrapped AND (last_key < pass_first OR k >= pass_first)) OR (NOT wrapped AND last_key < pass_first AND k >= pass_first) THEN
      EXIT WHEN took_in_pass = 0;
      -- The next pass shares what is left evenly among the keys that took in this one (with
      -- one key, the second pass takes the rest at once).
      quantum := greatest(1, ceil((p_slots - taken)::float8 / keys_took)::int);
      took_in_pass := 0;
      keys_took := 0;
      pass_first := k;
    END IF;
    last_key := k;
    visits := visits + 1;
    CONTINUE WHEN NOT pg_try_advisory_xact_lock(hashtext('errand.key:{{schema}}'), hashtext(k));
    -- After the lock: claims of this key are serialised, so its times only go forward.
    t := clock_timestamp();
    SELECT l.concurrency, l.rate_count, l.rate_period_ms INTO lim FROM {{schema}}.limits l
     WHERE l.key = k OR (right(l.key, 1) = '*' AND left(k, length(l.key) - 1) = left(l.key, -1))
     ORDER BY l.key = k DESC, length(l.key) DESC LIMIT 1;
    room := least(quantum, p_slots - taken);
    IF lim.concurrency IS NOT NULL THEN
      room := least(room, lim.concurrency - (SELECT count(*) FROM {{schema}}.jobs r WHERE ${counts.running}));
    END IF;
    IF room > 0 AND lim.rate_count IS NOT NULL THEN
      n := (SELECT count(*) FROM {{schema}}.jobs r
            WHERE r.concurrency_key = k AND r.${counts.startedAt} > t - lim.rate_period_ms * interval '1 millisecond');
      room := least(room, lim.rate_count - n);
      IF room <= 0 THEN
        room := 0;
        -- The start whose leaving the window frees a place: then one more may start.
        oldest := (SELECT r.${counts.startedAt} FROM {{schema}}.jobs r
                   WHERE r.concurrency_key = k AND r.${counts.startedAt} > t - lim.rate_period_ms * interval '1 millisecond'
                   ORDER BY r.${counts.startedAt} OFFSET n - lim.rate_count LIMIT 1);
        IF EXISTS (SELECT 1 FROM {{schema}}.jobs r
                   WHERE ${counts.ready} AND r.queue = p_queue AND r.concurrency_key = k AND r.run_at <= t AND r.kind = ANY(p_kinds)) THEN
          wait := least(wait, greatest(1, extract(epoch FROM oldest - t) * 1000 + lim.rate_period_ms));
        END IF;
      END IF;
    END IF;
    CONTINUE WHEN room <= 0;
    RETURN QUERY
      WITH next AS (
        SELECT r.ctid FROM {{schema}}.jobs r
        WHERE ${counts.ready} AND r.queue = p_queue AND r.concurrency_key = k AND r.run_at <= t AND r.kind = ANY(p_kinds)
        ORDER BY r.priority DESC, r.run_at, r.id
        LIMIT room
        FOR UPDATE SKIP LOCKED
      )${counts.leases ? leasedClaim(update, "j.concurrency_key") : `
      ${update}
      RETURNING j.id, j.kind, j.payload, j.attempts, true, j.max_attempts, j.retry::text, j.timeout_ms,
                (extract(epoch FROM j.run_at) * 1000)::float8, (extract(epoch FROM j.created_at) * 1000)::float8,
                j.checkpoint::text, j.concurrency_key, NULL::float8`};
    GET DIAGNOSTICS n = ROW_COUNT;
    taken := taken + n;
    took_in_pass := took_in_pass + n;
    keys_took := keys_took + (n > 0)::int;
  END LOOP;
  RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::jsonb, NULL::int, NULL::boolean, NULL::int, NULL::text, NULL::int,
                      NULL::float8, NULL::float8, NULL::text, last_key, wait${counts.leases ? ", NULL::bigint" : ""};
END;
$$;
`;
}
