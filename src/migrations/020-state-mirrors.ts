import { claimKeyed } from "./016-limits.js";
import type { Migration } from "./migration.js";

/**
 * The columns migration 020 derives from a job's state, each with its value as an expression
 * on the row `NEW`. A trigger keeps them so on every insert and update, whoever writes the
 * row (errand's statements, plain SQL, another tool). Written here once: the trigger's
 * condition, its function and the backfill are all made from them.
 */
export const mirrors: Readonly<Record<string, string>> = {
  // 'done', 'dead' or 'cancelled' once the job finished; NULL while it waits or runs.
  outcome: "CASE WHEN NEW.status IN ('done', 'dead', 'cancelled') THEN NEW.status END",
  // The concurrency key of a running keyed job (its place in its key's concurrency).
  key_running: "CASE WHEN NEW.status = 'running' THEN NEW.concurrency_key END",
  // When a keyed job started (its place in its key's rate window).
  key_started_at: "CASE WHEN NEW.concurrency_key IS NOT NULL THEN NEW.started_at END",
};

/** Whether a mirror of row `row` among `of` differs from what the row's state says it is. */
const stale = (of: Readonly<Record<string, string>>, row: string): string =>
  Object.entries(of).map(([column, value]) => `${row}.${column} IS DISTINCT FROM (${value.replaceAll("NEW.", `${row}.`)})`).join("\n   OR ");

/** The trigger function that keeps the mirrors `of`, made by `create` (CREATE FUNCTION, or CREATE OR REPLACE FUNCTION), and its trigger. */
export function mirrorTrigger(create: string, of: Readonly<Record<string, string>>): string {
  return `${create} {{schema}}.jobs_mirror() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
${Object.entries(of).map(([column, value]) => `  NEW.${column} := ${value};`).join("\n")}
  RETURN NEW;
END;
$$;
CREATE TRIGGER jobs_mirror BEFORE INSERT OR UPDATE ON {{schema}}.jobs
FOR EACH ROW WHEN (${stale(of, "NEW")})
EXECUTE FUNCTION {{schema}}.jobs_mirror();`;
}

/**
 * 020: the states that indexes select by, mirrored in columns that a plain claim never changes.
 *
 * PostgreSQL writes an update in place (a HOT update: no new index entry anywhere) only
 * when no column that any index names — as a key or in its predicate — changes. Every
 * claim changes `status` and `started_at`, and five indexes named them: the dead, done and
 * cancelled jobs (`WHERE status = …`), a key's running jobs and its recent starts. They
 * now select by these mirrors, which a claim of a job without a concurrency key leaves as
 * they were (NULL). One step of several towards claims written in place (issue 14).
 */
export const migration: Migration = {
  version: 20,
  name: "state-mirrors",
  indexes: [
    { name: "jobs_outcome_dead", table: "jobs", columns: "(kind, id) WHERE outcome = 'dead'" },
    { name: "jobs_outcome_done", table: "jobs", columns: "(finished_at) WHERE outcome = 'done'" },
    { name: "jobs_outcome_cancelled", table: "jobs", columns: "(finished_at) WHERE outcome = 'cancelled'" },
    { name: "jobs_key_running", table: "jobs", columns: "(key_running) WHERE key_running IS NOT NULL" },
    { name: "jobs_key_started", table: "jobs", columns: "(concurrency_key, key_started_at) WHERE key_started_at IS NOT NULL" },
  ],
  retires: ["jobs_dead", "jobs_done", "jobs_cancelled", "jobs_keyed_running", "jobs_keyed_started"],
  backfill: {
    table: "jobs",
    set: Object.entries(mirrors).map(([column, value]) => `${column} = ${value.replaceAll("NEW.", "j.")}`).join(", "),
    where: stale(mirrors, "j"),
  },
  sql: `-- Nullable columns without a default: adding them rewrites nothing and holds the table's
-- lock for a moment. The rows already there get their values after this transaction, in
-- batches (the migration's backfill), before the indexes they replace are dropped.
ALTER TABLE {{schema}}.jobs ${Object.keys(mirrors).map((column) => `ADD COLUMN ${column} ${column === "key_started_at" ? "timestamptz" : "text"}`).join(", ")};

-- The trigger's condition is evaluated without calling the function, so only writes whose
-- mirrors would be stale pay for it: a job finishing or leaving its finished state, a keyed
-- job starting or stopping. A plain claim, heartbeat or completion moved to done_jobs does not.
${mirrorTrigger("CREATE FUNCTION", mirrors)}

-- What claim_keyed counts from now on, for the rows already there, in this transaction: a
-- key's running jobs and its starts within the longest rate period of any limit (few rows,
-- found through the indexes this migration replaces). Without them, keyed jobs started
-- before the upgrade would not count against their key's limits until the backfill.
UPDATE {{schema}}.jobs SET key_running = concurrency_key WHERE status = 'running' AND concurrency_key IS NOT NULL;
UPDATE {{schema}}.jobs SET key_started_at = started_at
WHERE concurrency_key IS NOT NULL AND started_at IS NOT NULL
  AND started_at > now() - (SELECT max(rate_period_ms) FROM {{schema}}.limits) * interval '1 millisecond';

${claimKeyed("CREATE OR REPLACE FUNCTION", { running: "r.key_running = k", startedAt: "key_started_at", ready: "r.status = 'ready'", leases: false })}`,
};
