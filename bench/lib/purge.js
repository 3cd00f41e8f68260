// The purger under load (issue 14: "the pruner deletes 7 days of history without long
// transactions, lock waits or a throughput dip beyond 10 %"). Two identical tables hold a
// week of done jobs past the retention; the worker processes jobs on one while the purger
// deletes that week, and on the other without it, in the same minutes.
import { dropSchema, pgUrl, withPg } from "./common.js";
import { processJobs } from "./scenarios.js";
import { errandClass } from "../systems/errand.js";
import { backendsOf, cpuBetween, postgresCpu } from "./pg-cpu.js";

const day = 86_400_000;

/**
 * `rows` done jobs finished 7 to 14 days ago, in done_jobs as the worker leaves them (ids
 * below the jobs table's, which start at 1): the week a purge with the default retention deletes.
 */
async function weekPastRetention(ns, rows) {
  await withPg(async (c) => {
    await c.query(`
      INSERT INTO "${ns}".done_jobs (id, kind, payload, status, priority, attempts, max_attempts, run_at, errors, created_at, started_at, finished_at, queue)
      SELECT -g, 'bench_history', jsonb_build_object('i', g), 'done', 0, 1, 8, t, '[]', t, t, t, 'default'
      FROM generate_series(1, $1::int) AS g, LATERAL (SELECT now() - interval '7 days 1 hour' - (g::float8 / $1) * interval '7 days' AS t) AS at`, [rows]);
    await c.query(`VACUUM ANALYZE "${ns}".done_jobs`);
  });
}

/**
 * Samples every 10 ms: the age of the purger's open transaction (its backends are named
 * `name`), and statements on `ns` waiting for a lock. Returns the longest of each.
 */
function watch(ns, name) {
  let stopped = false;
  const seen = { longestPurgeTransactionMs: 0, lockWaitSamples: 0, longestLockWaitMs: 0, samples: 0, lockWaits: new Set() };
  const loop = withPg(async (c) => {
    while (!stopped) {
      const { rows: [row] } = await c.query(
        `SELECT coalesce(max(extract(epoch FROM clock_timestamp() - xact_start) * 1000) FILTER (WHERE application_name = $1), 0) AS purge_ms,
                count(*) FILTER (WHERE wait_event_type = 'Lock' AND query LIKE '%' || $2 || '%') AS waiting,
                coalesce(max(extract(epoch FROM clock_timestamp() - state_change) * 1000) FILTER (WHERE wait_event_type = 'Lock' AND query LIKE '%' || $2 || '%'), 0) AS wait_ms,
                string_agg(DISTINCT wait_event || ': ' || left(btrim(regexp_replace(query, '[[:space:]]+', ' ', 'g')), 60), '; ') FILTER (WHERE wait_event_type = 'Lock' AND query LIKE '%' || $2 || '%') AS waits
         FROM pg_stat_activity WHERE pid <> pg_backend_pid()`, [name, ns]);
      seen.samples++;
      seen.longestPurgeTransactionMs = Math.max(seen.longestPurgeTransactionMs, Number(row.purge_ms));
      if (Number(row.waiting) > 0) seen.lockWaitSamples++;
      seen.longestLockWaitMs = Math.max(seen.longestLockWaitMs, Number(row.wait_ms));
      if (row.waits) seen.lockWaits.add(row.waits.replaceAll(ns, "ns"));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  });
  return async () => {
    stopped = true;
    await loop;
    return { ...seen, lockWaits: [...seen.lockWaits] };
  };
}

/** Alternates which table is processed first from one measurement to the next. */
let measured = 0;

/**
 * Fills `ns` with the week past retention and processes `count` jobs on it, with the purger
 * deleting that week meanwhile when `purge` (started before the jobs are enqueued, so it
 * runs through the processing). Returns the rate and, with the purger, what it did.
 */
async function processOn(system, ns, { rows, count, capMs, purge }) {
  const name = `bench_purge_${process.pid}`;
  let purging;
  let stopWatching;
  const timed = {};
  try {
    const result = await processJobs(system, ns, { count, capMs, mode: "default", keep: true, analyze: false, before: async (n) => {
      await weekPastRetention(n, rows);
      if (!purge) return;
      const Errand = await errandClass();
      const errand = await Errand.open({ connectionString: `${pgUrl}${pgUrl.includes("?") ? "&" : "?"}application_name=${name}`, schema: n, migrate: false, poolSize: 1 });
      stopWatching = watch(n, name);
      timed.started = performance.now();
      timed.cpu = postgresCpu();
      timed.pids = await backendsOf(name);
      purging = errand.purge({ olderThanMs: 7 * day })
        .then((purged) => ({ ...purged, ended: performance.now(), cpuSeconds: cpuBetween(timed.cpu, postgresCpu(), timed.pids) }))
        .finally(() => errand.close());
    } });
    if (!purge) return { rate: result.value };
    const processedAt = performance.now();
    const purged = await purging;
    const seen = await stopWatching();
    const purgeSeconds = (purged.ended - timed.started) / 1000;
    return {
      rate: result.value, deleted: purged.done, batches: purged.batches, purgeSeconds, deletedPerSecond: purged.done / purgeSeconds,
      purgeOutlastedProcessing: purged.ended > processedAt, purgeBackendCores: purged.cpuSeconds / purgeSeconds, ...seen,
    };
  } finally {
    await purging?.catch(() => {});
    await stopWatching?.().catch(() => {});
    await dropSchema(ns).catch(() => {});
  }
}

/**
 * value: jobs/s on a table whose week past retention the purger deletes meanwhile; beside
 * it, the same on an identical table without the purger (`withoutPurger`), each table
 * fresh (a second run on one table is slower by itself: the first left dead row versions
 * behind), in alternating order. Also the ratio, what the purge deleted and how fast, its
 * longest transaction, its backend's CPU, and lock waits seen on the table.
 */
export async function purgeUnderLoad(system, ns, { rows, count, capMs }) {
  const order = measured++ % 2 === 0 ? [false, true] : [true, false];
  const runs = {};
  for (const purge of order) runs[purge] = await processOn(system, `${ns}_${purge ? "purged" : "kept"}`, { rows, count, capMs, purge });
  const { rate, ...purged } = runs[true];
  const result = { value: rate, withoutPurger: runs[false].rate, ratio: rate / runs[false].rate, purgerFirst: order[0], ...purged };
  console.error(`  history_purge: ${Math.round(rate)} jobs/s with the purger, ${Math.round(result.withoutPurger)} without (${(result.ratio * 100).toFixed(1)} %, ${order[0] ? "with" : "without"} first); ` +
    `purged ${purged.deleted} rows in ${purged.batches} batches, ${purged.purgeSeconds.toFixed(1)} s (${Math.round(purged.deletedPerSecond)} rows/s, ${purged.purgeOutlastedProcessing ? "outlasted" : "ended before"} the processing); ` +
    `purger's backend ${purged.purgeBackendCores.toFixed(2)} cores; longest purge transaction ${purged.longestPurgeTransactionMs.toFixed(0)} ms; ` +
    `lock waits in ${purged.lockWaitSamples} of ${purged.samples} samples, longest ${purged.longestLockWaitMs.toFixed(0)} ms ${purged.lockWaits.join(" | ")}`);
  return result;
}
