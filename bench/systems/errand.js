// errand, imported from the build (../../dist, or BENCH_ERRAND_DIST: another checkout's
// dist/index.js, for A/B runs with bench/ab.js), against the bench PostgreSQL.
import { pathToFileURL } from "node:url";
import { dropSchema, inHeldTransaction, pgProbe, pgUrl, withPg } from "../lib/common.js";
import { knobsFor } from "../lib/peer-settings.js";

/**
 * Worker settings per mode. "best" is the fastest found (BENCH_ERRAND_BEST / _DEFAULT,
 * JSON, override them to try others).
 */
export const settings = {
  default: JSON.parse(process.env.BENCH_ERRAND_DEFAULT ?? "{}"),
  // bench/tune.js passes the settings to try through the mode name: "json:{…}".
  ...Object.fromEntries((process.env.BENCH_ERRAND_VARIANTS ?? "").split("\n").filter(Boolean).map((v) => [`json:${v}`, JSON.parse(v)])),
  best: JSON.parse(process.env.BENCH_ERRAND_BEST ?? '{"concurrency":100,"prefetch":4000}'),
  latency: {},
  // The features' cost per job (scenarios feat_*): defaults, another handler.
  result: {},
  progress: {},
  batch: {},
};

/** The bench handler per mode: a no-op, or one that uses a feature of long-running work. */
function benchHandler(mode, onJobs) {
  if (mode === "result") return async (payload) => (onJobs([payload]), { ok: true, i: payload.i });
  if (mode === "progress") {
    return async (payload, ctx) => {
      ctx.progress(50);
      onJobs([payload]);
    };
  }
  return async (payload) => void onJobs([payload]);
}

/** The Errand class of the build under test (read per call: bench/ab.js switches between builds). */
export async function errandClass() {
  const dist = process.env.BENCH_ERRAND_DIST;
  return (await import(dist ? pathToFileURL(dist).href : "../../dist/index.js")).Errand;
}

/** An errand instance in its own schema; `connections`: its pool size (errand's default when unset). */
export function create(ns, { connections } = {}) {
  let errand;
  const url = process.env.BENCH_ERRAND_URL ?? pgUrl; // experiments only (e.g. ?options=…)
  // BENCH_ERRAND_POOL_SIZE: fewer connections per process (the idle scenario's 50 workers must fit max_connections).
  const poolSize = connections ?? (process.env.BENCH_ERRAND_POOL_SIZE ? Number(process.env.BENCH_ERRAND_POOL_SIZE) : undefined);
  const pool = poolSize ? { poolSize } : {};
  const open = async (migrate) => (errand ??= await (await errandClass()).open({ connectionString: url, schema: ns, migrate, ...pool }));
  return {
    async setup() {
      await dropSchema(ns);
      await open(true);
    },
    async enqueueOne(payload) {
      await (await open(false)).enqueue("bench", payload);
    },
    /** One job enqueued in the caller's transaction, committed `holdMs` later (see inHeldTransaction). */
    async enqueueHeld(payload, holdMs) {
      const client = await open(false);
      await inHeldTransaction((db) => client.enqueue("bench", payload, { db }), holdMs);
    },
    /**
     * `keys`: spread the jobs over that many concurrency keys (k0, k1, …), for the limits
     * scenarios; `queue`: into that queue (else `default`).
     */
    async enqueueMany(payloads, keys, queue) {
      const spec = (payload) => ({ kind: "bench", payload, ...(keys ? { concurrencyKey: `k${payload.i % keys}` } : {}), ...(queue ? { queue } : {}) });
      await (await open(false)).enqueueMany(payloads.map(spec));
    },
    /** One batch of `payloads` with a callback job (kind bench_done, not counted as handled). */
    async enqueueBatch(payloads) {
      await (await open(false)).batch({ jobs: payloads.map((payload) => ({ kind: "bench", payload })), then: { kind: "bench_done" } });
    },
    /** `queue`: the worker serves that queue alone, with the mode's concurrency (else `default`). */
    async startWorker(mode, onJobs, queue) {
      const client = await open(false);
      const { concurrency, ...knobs } = knobsFor(settings, mode);
      const worker = client.worker({
        ...knobs,
        ...(queue ? { queues: { [queue]: concurrency ?? 10 } } : concurrency === undefined ? {} : { concurrency }),
        // Batches' callbacks are bench_done jobs, run but not counted.
        handlers: mode === "batch" ? { bench: benchHandler(mode, onJobs), bench_done: async () => {} } : { bench: benchHandler(mode, onJobs) },
        onEvent: (event) => {
          if (event.type === "error") console.error("errand worker error", event.during, event.error);
        },
      });
      await worker.start();
      return { stop: () => worker.stop({ timeout: 5_000 }) };
    },
    async completed() {
      return withPg(async (c) => {
        // all_jobs (migration 018): done jobs are in done_jobs too; a build from before it (bench/ab.js) has jobs only.
        const table = (await c.query(`SELECT to_regclass($1) IS NULL AS old`, [`"${ns}".all_jobs`])).rows[0].old ? "jobs" : "all_jobs";
        return Number((await c.query(`SELECT count(*) FROM "${ns}".${table} WHERE status = 'done' AND kind = 'bench'`)).rows[0].count);
      });
    },
    /**
     * `seeded` minus the bench jobs completed since the probe opened, from done_counts: the
     * statement that marks jobs done adds them there, so it counts exactly the completions
     * committed, in a few rows. Not the jobs table: its partial indexes of waiting and running
     * jobs keep an entry for every job of the run until vacuum (10 million more in the history
     * scenarios, which errand's claim skips and a count would walk at every poll).
     */
    async probe(seeded) {
      const done = `SELECT coalesce(sum(done), 0) AS done FROM "${ns}".done_counts WHERE kind = 'bench'`;
      const before = await withPg(async (c) => Number((await c.query(done)).rows[0].done)); // a reused table's earlier runs
      return pgProbe(`SELECT ${seeded + before} - done AS n FROM (${done}) AS d`);
    },
    async close() {
      await errand?.close();
      errand = undefined;
    },
    teardown: () => dropSchema(ns),
  };
}
