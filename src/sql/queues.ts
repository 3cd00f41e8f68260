import type { Statement } from "../driver/types.js";
import { channelFor, memoisePerSchema, qualified, statement } from "./statement.js";

/**
 * The payload of the notice on the jobs channel ({@link channelFor}) that says a queue or
 * kind was paused or resumed: every worker reads the pauses again. An older worker takes
 * it for an enqueue's notice (a look for jobs), which is harmless.
 */
export const pauseNotice = "pause";

/** The statements of pausing and of per-queue figures, for one schema. */
export interface QueueQueries {
  readonly pause: Statement;
  readonly resume: Statement;
  readonly listPauses: Statement;
  readonly workerGates: Statement;
  readonly nextDue: Statement;
}

/** The statements for `schema` (memoised). */
export const queueQueriesFor = memoisePerSchema((schema): QueueQueries => build(qualified(schema), channelFor(schema)));

function build(s: string, channel: string): QueueQueries {
  const jobs = `${s}.jobs`;
  return {
    /*
     * pause — pauses queue or kind $2 ($1 = 'queue' | 'kind') and tells the workers (a
     * notice on the jobs channel, delivered at commit). rows: changed (false when it was
     * paused already)
     */
    pause: statement(`
      WITH added AS (
        INSERT INTO ${s}.pauses (scope, name) VALUES ($1::text, $2::text) ON CONFLICT DO NOTHING RETURNING 1
      )
      SELECT EXISTS (SELECT 1 FROM added) AS changed,
             (SELECT pg_notify('${channel}', '${pauseNotice}') FROM added) IS NULL AS notified`),

    /* resume — undoes pause; the same parameters and rows. Workers look for jobs at once. */
    resume: statement(`
      WITH removed AS (
        DELETE FROM ${s}.pauses WHERE scope = $1::text AND name = $2::text RETURNING 1
      )
      SELECT EXISTS (SELECT 1 FROM removed) AS changed,
             (SELECT pg_notify('${channel}', '${pauseNotice}') FROM removed) IS NULL AS notified`),

    /* listPauses — no params; rows: scope, name, paused_at */
    listPauses: statement(`SELECT scope, name, paused_at FROM ${s}.pauses ORDER BY scope, name`),

    /*
     * workerGates — what a worker reads at start, on the pause notice and every second: the
     * pauses (scope 'queue' or 'kind') and the queues with a concurrency limit (scope
     * 'limit'), whose claims go through claim_limited. stats reads it too, for the paused and
     * limited queues and the paused kinds (their jobs it counts itself, src/sql/observe.ts).
     * No params; rows: scope, name, concurrency (the limit; null for a pause)
     */
    workerGates: statement(`
      SELECT scope, name, NULL::int AS concurrency FROM ${s}.pauses UNION ALL SELECT 'limit', queue, concurrency FROM ${s}.queue_limits ORDER BY 1, 2`, true),

    /*
     * nextDue — what a worker at rest asks instead of claiming: in how many ms the first
     * ready job of queue $1 and kinds $2 is due, without a concurrency key (plain_ms) and
     * with one (keyed_ms); 0 or less: one is due now; NULL: none is ready. The clock is the
     * database's, so the worker's own may be off. Reads the ready indexes as an empty claim
     * does (one branch each). rows: one, plain_ms and keyed_ms (float8 or NULL)
     */
    nextDue: statement(`
      SELECT (extract(epoch FROM (SELECT min(run_at) FROM ${jobs} WHERE status = 'ready' AND outcome IS NULL AND queue = $1::text AND concurrency_key IS NULL AND kind = ANY($2::text[])) - now()) * 1000)::float8 AS plain_ms,
             (extract(epoch FROM (SELECT min(run_at) FROM ${jobs} WHERE status = 'ready' AND outcome IS NULL AND queue = $1::text AND concurrency_key IS NOT NULL AND kind = ANY($2::text[])) - now()) * 1000)::float8 AS keyed_ms`, true),
  };
}
