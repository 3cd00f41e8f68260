// The purger under load (issue 14: "the pruner deletes 7 days of history without long
// transactions, lock waits or a throughput dip beyond 10 %"). One table holds a week of
// done jobs past the retention; the worker processes jobs on it first without the purger,
// then while the purger deletes that week. Both runs in the same minutes, on the same table.
import { dropSchema, pgUrl, withPg } from "./common.js";
import { processJobs } from "./scenarios.js";
import { errandClass } from "../systems/errand.js";
import { backendsOf, cpuBetween, postgresCpu } from "./pg-cpu.js";

const day = 86_400_000;

/** `rows` done jobs finished 7 to 14 days ago: the week a purge with the default retention deletes. */
async function weekPastRetention(ns, rows) {
  await withPg(async (c) => {
    await c.query(`
      INSERT INTO "${ns}".jobs (kind, payload, status, attempts, run_at, created_at, started_at, finished_at)
      SELECT 'bench_history', jsonb_build_object('i', g), 'done', 1, t, t, t, t
      FROM generate_series(1, $1::int) AS g, LATERAL (SELECT now() - interval '7 days 1 hour' - (g::float8 / $1) * interval '7 days' AS t) AS at`, [rows]);
    await c.query(`VACUUM ANALYZE "${ns}".jobs`);
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
                string_agg(DISTINCT wait_event || ': ' || left(query, 30), '; ') FILTER (WHERE wait_event_type = 'Lock' AND query LIKE '%' || $2 || '%') AS waits
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

/**
 * value: jobs/s while the purger runs; also the rate without it (`withoutPurger`), their
 * ratio, what the purge deleted and how fast, its longest transaction, and lock waits seen.
 */
export async function purgeUnderLoad(system, ns, { rows, count, capMs }) {
  const name = `bench_purge_${process.pid}`;
  let purging;
  let stopWatching;
  try {
    const without = await processJobs(system, ns, { count, capMs, mode: "default", keep: true, before: (n) => weekPastRetention(n, rows) });
    const Errand = await errandClass();
    const errand = await Errand.open({ connectionString: `${pgUrl}${pgUrl.includes("?") ? "&" : "?"}application_name=${name}`, schema: ns, migrate: false, poolSize: 1 });
    const timed = { started: 0, ended: 0 };
    const during = await processJobs(system, ns, { count, capMs, mode: "default", reuse: true, keep: true, before: async () => {
      stopWatching = watch(ns, name);
      timed.started = performance.now();
      timed.cpu = postgresCpu();
      timed.pids = await backendsOf(name);
      purging = errand.purge({ olderThanMs: 7 * day }).then((result) => ((timed.ended = performance.now()), (timed.cpuSeconds = cpuBetween(timed.cpu, postgresCpu(), timed.pids)), result)).finally(() => errand.close());
    } });
    const processedAt = performance.now();
    const purged = await purging;
    const seen = await stopWatching();
    const purgeSeconds = (timed.ended - timed.started) / 1000;
    const result = {
      value: during.value, withoutPurger: without.value, ratio: during.value / without.value,
      deleted: purged.done, batches: purged.batches, purgeSeconds, deletedPerSecond: purged.done / purgeSeconds,
      purgeOutlastedProcessing: timed.ended > processedAt, purgeBackendCores: timed.cpuSeconds / purgeSeconds, ...seen,
    };
    console.error(`  history_purge: ${Math.round(during.value)} jobs/s with the purger, ${Math.round(without.value)} without (${(result.ratio * 100).toFixed(1)} %); ` +
      `purged ${purged.done} rows in ${purged.batches} batches, ${purgeSeconds.toFixed(1)} s (${Math.round(result.deletedPerSecond)} rows/s, ${result.purgeOutlastedProcessing ? "outlasted" : "ended before"} the processing); ` +
      `purger's backend ${result.purgeBackendCores.toFixed(2)} cores; longest purge transaction ${seen.longestPurgeTransactionMs.toFixed(0)} ms; lock waits in ${seen.lockWaitSamples} of ${seen.samples} samples, longest ${seen.longestLockWaitMs.toFixed(0)} ms ${seen.lockWaits.join(" | ")}`);
    return result;
  } finally {
    await purging?.catch(() => {});
    await stopWatching?.().catch(() => {});
    await dropSchema(ns).catch(() => {});
  }
}
