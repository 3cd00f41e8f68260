import type { Statement } from "../driver/types.js";
import { pauseNotice } from "./queues.js";
import { channelFor, memoisePerSchema, qualified, statement } from "./statement.js";

/**
 * The payload of the notice on the jobs channel ({@link channelFor}) that says jobs with a
 * concurrency key were enqueued: it makes a worker that found no keyed jobs claim keyed
 * ones again (see KeyedClaim). Sent by errand's enqueue and batch calls after the insert,
 * and by a rescue that made jobs ready (a worker at rest polls rarely); an older worker
 * takes it for an enqueue's notice, which is what it is.
 */
export const keyedNotice = "keyed";

/** The statements of concurrency keys and their limits (see migration 016). */
export interface LimitQueries {
  readonly claimKeyed: Statement;
  readonly announceKeyed: Statement;
  readonly claimLimited: Statement;
  readonly countRunning: Statement;
  readonly setQueue: Statement;
  readonly removeQueue: Statement;
  readonly listQueues: Statement;
  readonly set: Statement;
  readonly remove: Statement;
  readonly list: Statement;
}

/** The statements for `schema` (memoised). */
export const limitQueriesFor = memoisePerSchema((schema): LimitQueries => build(qualified(schema), channelFor(schema)));

/** Whether limit `l`'s key covers job `j`'s key: the same key, or a prefix ending in '*'. */
const covers = "(j.concurrency_key = l.key OR (right(l.key, 1) = '*' AND left(j.concurrency_key, length(l.key) - 1) = left(l.key, -1)))";

function build(s: string, channel: string): LimitQueries {
  return {
    /*
     * claimKeyed — up to $1 keyed jobs, all started now, for worker $2 with lease $4 ms (or
     * the kind's in $3, JSON kind → ms), keys round-robin from after $5, of queue $6 and kinds $7 (see claim_keyed in
     * migration 016). rows: the claim's columns (see ClaimRow), then one row with id NULL:
     * concurrency_key (the last key visited), wait_ms (until a rate lets a job start; NULL: none waits),
     * keyed_ready (whether queue $6 has any ready keyed job at all, due or not, of any kind: false
     * lets the worker skip keyed claims until a keyed notice; one probe of jobs_ready_keyed, and
     * only on that row)
     */
    claimKeyed: statement(`
      SELECT c.*, CASE WHEN c.id IS NULL THEN EXISTS (SELECT 1 FROM ${s}.jobs r WHERE r.status = 'ready' AND r.outcome IS NULL AND r.queue = $6::text AND r.concurrency_key IS NOT NULL) END AS keyed_ready
      FROM ${s}.claim_keyed($1::int, $2::text, $3::jsonb, $4::float8, $5::text, $6::text, $7::text[]) c`),

    /* announceKeyed — the keyed notice (see keyedNotice), sent after an insert of keyed jobs; delivered at commit */
    announceKeyed: statement(`SELECT pg_notify('${channel}', '${keyedNotice}') IS NULL AS notified`),

    /*
     * claimLimited — the claim of a queue with a concurrency limit (claim_limited, migration
     * 017): the same parameters and rows as claimKeyed, keyed and unkeyed jobs together.
     */
    claimLimited: statement(`SELECT * FROM ${s}.claim_limited($1::int, $2::text, $3::jsonb, $4::float8, $5::text, $6::text, $7::text[])`),

    /*
     * countRunning — jobs $1 (bigint[]) that worker $2's plain claims started before it heard
     * that their queue has a limit now: they count against it from here on (setQueue marked
     * the queue's running jobs as it ran; a claim that ran after it, before the worker heard,
     * left its jobs unmarked). rows: none
     */
    countRunning: statement(`
      UPDATE ${s}.jobs SET queue_running = queue
      WHERE id = ANY($1::bigint[]) AND status = 'running' AND locked_by = $2 AND queue_running IS NULL`),

    /*
     * setQueue — $1 queue, $2 concurrency; tells the workers (the pause notice: they read
     * their queues' pauses and limits again). The queue's jobs running now count against it:
     * those an unlimited claim started are marked (queue_running, migration 021; keyed jobs
     * were marked by their claim), read through jobs_open_plain. rows: none
     */
    setQueue: statement(`
      WITH set AS (
        INSERT INTO ${s}.queue_limits (queue, concurrency) VALUES ($1, $2)
        ON CONFLICT (queue) DO UPDATE SET concurrency = EXCLUDED.concurrency, updated_at = now() RETURNING 1
      ), counted AS (
        UPDATE ${s}.jobs SET queue_running = queue
        WHERE queue = $1 AND outcome IS NULL AND concurrency_key IS NULL AND status = 'running' AND queue_running IS NULL
      )
      SELECT (SELECT pg_notify('${channel}', '${pauseNotice}') FROM set) IS NULL AS notified`),

    /* removeQueue — $1 queue; rows: notified (none if it had no limit) */
    removeQueue: statement(`
      WITH removed AS (DELETE FROM ${s}.queue_limits WHERE queue = $1 RETURNING 1)
      SELECT pg_notify('${channel}', '${pauseNotice}') IS NULL AS notified FROM removed`),

    /*
     * listQueues — every queue limit with its running jobs (through jobs_queue_running: the jobs
     * its limited claims started, and the keyed ones).
     * rows: queue, concurrency, running
     */
    listQueues: statement(`
      SELECT l.queue, l.concurrency,
             (SELECT count(*) FROM ${s}.jobs j WHERE j.queue_running = l.queue) AS running
      FROM ${s}.queue_limits l ORDER BY l.queue`),

    /* set — $1 key, $2 concurrency, $3 rate_count, $4 rate_period_ms (each NULL for none) */
    set: statement(`
      INSERT INTO ${s}.limits (key, concurrency, rate_count, rate_period_ms) VALUES ($1, $2, $3, $4)
      ON CONFLICT (key) DO UPDATE SET concurrency = EXCLUDED.concurrency, rate_count = EXCLUDED.rate_count,
        rate_period_ms = EXCLUDED.rate_period_ms, updated_at = now()`),

    /* remove — $1 key; rows: key (none if it had no limits) */
    remove: statement(`DELETE FROM ${s}.limits WHERE key = $1 RETURNING key`),

    /*
     * list — every limit with the running and ready jobs of the keys it covers (through the
     * keyed indexes: only keyed jobs are read), and how many of those ready and due are held
     * back by their key's rate now (their key started rate_count jobs within the period: one
     * count per key with due jobs, through jobs_key_started).
     * rows: key, concurrency, rate_count, rate_period_ms, running, ready, rate_held
     */
    list: statement(`
      SELECT l.key, l.concurrency, l.rate_count, l.rate_period_ms,
             (SELECT count(*) FROM ${s}.jobs j WHERE j.key_running IS NOT NULL AND ${covers}) AS running,
             (SELECT count(*) FROM ${s}.jobs j WHERE j.status = 'ready' AND j.outcome IS NULL AND j.concurrency_key IS NOT NULL AND ${covers}) AS ready,
             CASE WHEN l.rate_count IS NULL THEN 0 ELSE (
               SELECT coalesce(sum(d.n), 0) FROM (
                 SELECT j.concurrency_key AS k, count(*) AS n FROM ${s}.jobs j
                 WHERE j.status = 'ready' AND j.outcome IS NULL AND j.concurrency_key IS NOT NULL AND ${covers} AND j.run_at <= now() GROUP BY 1) d
               WHERE (SELECT count(*) FROM ${s}.jobs r WHERE r.concurrency_key = d.k
                        AND r.key_started_at > now() - l.rate_period_ms * interval '1 millisecond') >= l.rate_count) END AS rate_held
      FROM ${s}.limits l ORDER BY l.key`),
  };
}
