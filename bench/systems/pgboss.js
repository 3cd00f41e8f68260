// pg-boss 12 in its own schema. Jobs go to one queue, "bench".
import { PgBoss } from "pg-boss";
import { dropSchema, inHeldTransaction, pgProbe, pgUrl, withPg } from "../lib/common.js";
import { knobsFor, sweptBest } from "../lib/peer-settings.js";

/**
 * `work()` options per mode. "best": what `npm run bench:sweep` found
 * (bench/peer-settings.json), else batchSize 1000; latency: LISTEN/NOTIFY on.
 */
export const settings = {
  default: {},
  best: sweptBest("pgboss", { batchSize: 1000, localConcurrency: 1, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }),
  latency: { batchSize: 10, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 },
};

/**
 * The sweep's grid (bench/sweep.js): batchSize × localConcurrency (pg-boss 10+'s
 * replacement of teamSize), always fetching again at once while batches come back full.
 */
export const sweep = {
  batchSize: [100, 500, 1000, 2000],
  localConcurrency: [1, 2, 4],
  burstWhenBatchFull: [true],
  pollingIntervalSeconds: [0.5],
};

/** The knobs are pg-boss's own `work()` options. */
export const options = (knobs) => knobs;

/** A pg-boss instance in its own schema; `connections`: its pool size (10 when unset). */
export function create(ns, { connections = 10 } = {}) {
  let boss;
  const open = async (notify) => {
    if (boss) return boss;
    boss = new PgBoss({ connectionString: pgUrl, schema: ns, useListenNotify: notify, max: connections });
    boss.on("error", (error) => console.error("pg-boss error", error));
    await boss.start();
    return boss;
  };
  return {
    async setup() {
      await dropSchema(ns);
      const b = await open(true);
      await b.createQueue("bench", { notify: true });
    },
    async enqueueOne(payload) {
      await (await open(false)).send("bench", payload);
    },
    /** One job sent in the caller's transaction (send's `db` option), committed `holdMs` later. */
    async enqueueHeld(payload, holdMs) {
      const b = await open(false);
      await inHeldTransaction((c) => b.send("bench", payload, { db: { executeSql: (text, values) => c.query(text, values) } }), holdMs);
    },
    /** `keys`: spread the jobs over that many groups (k0, k1, …), for the limits scenarios. */
    async enqueueMany(payloads, keys) {
      await (await open(false)).insert("bench", payloads.map((data) => (keys ? { data, group: { id: `k${data.i % keys}` } } : { data })));
    },
    async startWorker(mode, onJobs) {
      const b = await open(mode === "latency");
      await b.work("bench", options(knobsFor(settings, mode)), async (jobs) => void onJobs(jobs.map((job) => job.data)));
      return { stop: () => b.stop({ graceful: true, timeout: 5_000 }).then(() => (boss = undefined)) };
    },
    async completed() {
      return withPg(async (c) => Number((await c.query(`SELECT count(*) FROM "${ns}".job WHERE state = 'completed'`)).rows[0].count));
    },
    /** The jobs not yet completed (job_i14, pg-boss's index of live jobs, holds them). */
    probe: () => pgProbe(`SELECT count(*) AS n FROM "${ns}".job WHERE name = 'bench' AND state IN ('created', 'retry', 'active')`),
    async close() {
      await boss?.stop({ graceful: false, timeout: 1_000 });
      boss = undefined;
    },
    teardown: () => dropSchema(ns),
  };
}
