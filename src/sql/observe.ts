import type { Statement } from "../driver/types.js";
import { memoisePerSchema, qualified, statement } from "./statement.js";
import { workerStaleSeconds } from "./workers.js";

/** The statements of stats, the pruner and alerts, for one schema. */
export interface ObserveQueries {
  readonly stats: Statement;
  readonly pruneDone: Statement;
  readonly pruneMoved: Statement;
  readonly pruneDead: Statement;
  readonly pruneCancelled: Statement;
  readonly pruneBatches: Statement;
  readonly countPrunable: Statement;
  readonly pruneOutcomeCounts: Statement;
  readonly openIncident: Statement;
  readonly closeIncident: Statement;
  readonly listIncidents: Statement;
}

/** The statements for `schema` (memoised). */
export const observeQueriesFor = memoisePerSchema((schema): ObserveQueries => build(qualified(schema)));

function build(s: string): ObserveQueries {
  const jobs = `${s}.jobs`;
  return {
    /*
     * stats — every figure per queue and kind in one round trip. Each arm reads one partial
     * index (the waiting and running jobs through jobs_open_plain and jobs_open_keyed, one
     * branch each; jobs_outcome_dead) or a small table, so the cost grows with the backlog
     * (ready, running, dead), never with the done or cancelled history. The waiting and
     * running jobs are read once, grouped by queue and kind: the figures per kind, the queue
     * depths and the ready jobs no live worker serves all come from those groups (three
     * reads side by side took 0.58–0.65 s with 1,000,000 ready jobs on 2 cores, one read
     * 0.22–0.26 s). The groups meet the live workers' pairs of queue and kind in a hash
     * join: looked for among the workers one group at a time, the estimate of 40,000
     * groups on that table made the plan's cost high enough for JIT compilation (1.2 s).
     * A run_at of -infinity (possible from plain SQL) counts as ready but has no age:
     * subtracting it fails on PostgreSQL before 16, and an infinite age is no figure.
     * No params. rows, in kind then queue order: at (now()), queue (null on the rows of
     * the history, counted per kind only), kind (null when there are no jobs), ready,
     * scheduled, oldest_ready_ms, running, expired, unserved (ready jobs, due or not, when no
     * worker seen within ${workerStaleSeconds} s has both their queue and kind; else 0), dead, done,
     * cancelled, done_1m, failed_1m, died_1m, timed_out_1m, cancelled_1m, done_1h, failed_1h,
     * died_1h, timed_out_1h, cancelled_1h (counts as bigint strings)
     */
    stats: statement(`
      SELECT n.at, x.queue, x.kind,
             sum(x.ready) AS ready, sum(x.scheduled) AS scheduled,
             extract(epoch FROM n.at - min(x.oldest)) * 1000 AS oldest_ready_ms,
             sum(x.running) AS running, sum(x.expired) AS expired, sum(x.unserved) AS unserved,
             sum(x.dead) AS dead, sum(x.done) AS done, sum(x.cancelled) AS cancelled,
             sum(x.done_1m) AS done_1m, sum(x.failed_1m) AS failed_1m, sum(x.died_1m) AS died_1m,
             sum(x.timed_out_1m) AS timed_out_1m, sum(x.cancelled_1m) AS cancelled_1m,
             sum(x.done_1h) AS done_1h, sum(x.failed_1h) AS failed_1h, sum(x.died_1h) AS died_1h,
             sum(x.timed_out_1h) AS timed_out_1h, sum(x.cancelled_1h) AS cancelled_1h
      FROM (SELECT now() AS at) n
      LEFT JOIN (
        SELECT o.queue, o.kind, o.ready, o.scheduled, o.oldest, o.running, o.expired,
               CASE WHEN served.queue IS NULL THEN o.ready + o.scheduled ELSE 0 END AS unserved,
               0 AS dead, 0 AS done, 0 AS cancelled,
               0 AS done_1m, 0 AS failed_1m, 0 AS died_1m, 0 AS timed_out_1m, 0 AS cancelled_1m,
               0 AS done_1h, 0 AS failed_1h, 0 AS died_1h, 0 AS timed_out_1h, 0 AS cancelled_1h
        FROM (SELECT queue, kind, count(*) FILTER (WHERE status = 'ready' AND run_at <= now()) AS ready,
                     count(*) FILTER (WHERE status = 'ready' AND run_at > now()) AS scheduled,
                     min(run_at) FILTER (WHERE status = 'ready' AND run_at <= now() AND isfinite(run_at)) AS oldest,
                     count(*) FILTER (WHERE status = 'running') AS running, count(*) FILTER (WHERE status = 'running' AND locked_until < now()) AS expired
              FROM (SELECT queue, kind, status, run_at, locked_until FROM ${jobs} WHERE outcome IS NULL AND concurrency_key IS NULL
                    UNION ALL SELECT queue, kind, status, run_at, locked_until FROM ${jobs} WHERE outcome IS NULL AND concurrency_key IS NOT NULL) r
              GROUP BY queue, kind) o
        LEFT JOIN (SELECT DISTINCT q.queue, k.kind
                   FROM ${s}.workers w, unnest(w.queues) AS q(queue), unnest(w.kinds) AS k(kind)
                   WHERE w.seen_at > now() - interval '${workerStaleSeconds} seconds') served ON served.queue = o.queue AND served.kind = o.kind
        UNION ALL
        SELECT NULL, kind, 0, 0, NULL, 0, 0, 0, count(*), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
        FROM ${jobs} WHERE outcome = 'dead' GROUP BY kind
        UNION ALL
        SELECT NULL, kind, 0, 0, NULL, 0, 0, 0, 0, sum(done), sum(cancelled), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
        FROM ${s}.done_counts GROUP BY kind
        UNION ALL
        SELECT NULL, kind, 0, 0, NULL, 0, 0, 0, 0, 0, 0,
               sum(done) FILTER (WHERE bucket > now() - interval '1 minute'),
               sum(failed) FILTER (WHERE bucket > now() - interval '1 minute'),
               sum(died) FILTER (WHERE bucket > now() - interval '1 minute'),
               sum(timed_out) FILTER (WHERE bucket > now() - interval '1 minute'),
               sum(cancelled) FILTER (WHERE bucket > now() - interval '1 minute'),
               sum(done), sum(failed), sum(died), sum(timed_out), sum(cancelled)
        FROM ${s}.outcome_counts WHERE bucket > now() - interval '1 hour' GROUP BY kind
      ) x ON true
      GROUP BY n.at, x.queue, x.kind
      ORDER BY x.kind, x.queue`),

    /*
     * pruneDone — deletes one batch of done jobs finished more than $1 ms ago, oldest
     * first through the jobs_outcome_done index; skips rows someone holds. $1 older_than_ms
     * float8, $2 batch size int. rows: id
     */
    pruneDone: pruneBatch(jobs, "outcome = 'done' AND finished_at < now() - $1::float8 * interval '1 millisecond'", "finished_at"),

    /*
     * pruneMoved — the same for done_jobs, the done jobs the workers moved out of jobs
     * (migration 018), through done_jobs_finished. $1 older_than_ms float8, $2 batch size int. rows: id
     */
    pruneMoved: pruneBatch(`${s}.done_jobs`, "finished_at < now() - $1::float8 * interval '1 millisecond'", "finished_at"),

    /*
     * pruneCancelled — the same for cancelled jobs, by the same age, through the
     * jobs_outcome_cancelled index. A running job cancelled keeps locked_by until its worker lets
     * go; deleting it sooner is harmless (the worker's heartbeat finds no row and aborts the
     * handler as a lost lease; its outcome writes find nothing). $1 older_than_ms float8, $2 batch size int. rows: id
     */
    pruneCancelled: pruneBatch(jobs, "outcome = 'cancelled' AND finished_at < now() - $1::float8 * interval '1 millisecond'", "finished_at"),

    /* pruneDead — the same for dead jobs (only when configured). $1 older_than_ms, $2 batch size. rows: id */
    pruneDead: pruneBatch(jobs, "outcome = 'dead' AND finished_at < now() - $1::float8 * interval '1 millisecond'", "id"),

    /*
     * countPrunable — what a prune would delete (dry run); reads the jobs_outcome_done,
     * done_jobs_finished and jobs_outcome_cancelled index ranges only (and the finished batches, counting their jobs
     * this purge would delete as gone). $1 done (and cancelled) older_than_ms, $2 dead
     * older_than_ms (null = keep dead). rows: done, cancelled, dead, finished_batches (bigint strings)
     */
    countPrunable: statement(`
      SELECT (SELECT count(*) FROM ${jobs} WHERE outcome = 'done' AND finished_at < now() - $1::float8 * interval '1 millisecond')
               + (SELECT count(*) FROM ${s}.done_jobs WHERE finished_at < now() - $1::float8 * interval '1 millisecond') AS done,
             (SELECT count(*) FROM ${jobs} WHERE outcome = 'cancelled' AND finished_at < now() - $1::float8 * interval '1 millisecond') AS cancelled,
             CASE WHEN $2::float8 IS NULL THEN 0 ELSE
               (SELECT count(*) FROM ${jobs} WHERE outcome = 'dead' AND finished_at < now() - $2::float8 * interval '1 millisecond') END AS dead,
             (SELECT count(*) FROM ${s}.batches x WHERE x.finished_at < now() - $1::float8 * interval '1 millisecond'
                AND NOT EXISTS (SELECT 1 FROM ${jobs} j WHERE j.batch_id = x.id AND NOT (
                  j.status IN ('done', 'cancelled') AND j.finished_at < now() - $1::float8 * interval '1 millisecond'
                  OR j.status = 'dead' AND $2::float8 IS NOT NULL AND j.finished_at < now() - $2::float8 * interval '1 millisecond'))) AS finished_batches`),

    /*
     * pruneBatches — deletes one batch of batch records finished more than $1 ms ago (the
     * done jobs' retention) none of whose jobs is left: a dead member kept for a person
     * keeps its batch too. Their callback jobs are ordinary jobs, purged on their own.
     * $1 older_than_ms float8, $2 batch size int. rows: id
     */
    pruneBatches: statement(`
      DELETE FROM ${s}.batches b
      WHERE b.id IN (
        SELECT x.id FROM ${s}.batches x
        WHERE x.finished_at < now() - $1::float8 * interval '1 millisecond'
          AND NOT EXISTS (SELECT 1 FROM ${jobs} j WHERE j.batch_id = x.id)
        ORDER BY x.finished_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED)
      RETURNING b.id`),

    /* pruneOutcomeCounts — drops stats buckets older than $1 ms. rows: none */
    pruneOutcomeCounts: statement(`DELETE FROM ${s}.outcome_counts WHERE bucket < now() - $1::float8 * interval '1 millisecond'`),

    /*
     * openIncident — records an alert incident unless it is already open; a row back
     * means this caller opened it and must notify. $1 key, $2 message. rows: key
     */
    openIncident: statement(`
      INSERT INTO ${s}.alert_incidents (key, message) VALUES ($1, $2)
      ON CONFLICT (key) DO NOTHING RETURNING key`),

    /* closeIncident — closes an open incident; a row back means this caller closed it. $1 key. rows: key, opened_at, message */
    closeIncident: statement(`DELETE FROM ${s}.alert_incidents WHERE key = $1 RETURNING key, opened_at, message`),

    /* listIncidents — the open incidents. No params. rows: key, opened_at, message */
    listIncidents: statement(`SELECT key, opened_at, message FROM ${s}.alert_incidents ORDER BY key`),
  };
}

/**
 * Deletes up to $2 rows of `table` matching `where`, first by `order`, skipping rows someone
 * holds; rows: id. The rows it locked are deleted by their ctid (a TID scan), not looked up
 * again by id: on 1,000-row batches of done_jobs that took 2.6 µs per row against 4.3
 * (bench/README, round of 2026-12-04, late night). A locked row cannot move meanwhile.
 */
function pruneBatch(table: string, where: string, order: string): Statement {
  return statement(`
      DELETE FROM ${table} j
      WHERE j.ctid = ANY(ARRAY(
        SELECT ctid FROM ${table}
        WHERE ${where}
        ORDER BY ${order}
        LIMIT $2
        FOR UPDATE SKIP LOCKED))
      RETURNING j.id`);
}
