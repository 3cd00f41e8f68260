// graphile-worker 0.18 in its own schema. Task identifier "bench".
import { makeWorkerUtils, run } from "graphile-worker";
import { dropSchema, inHeldTransaction, pgProbe, pgUrl, withPg } from "../lib/common.js";
import { knobsFor, sweptBest } from "../lib/peer-settings.js";

/**
 * Worker knobs per mode. "best": what `npm run bench:sweep` found (bench/peer-settings.json),
 * else the concurrency 100, localQueue 1000, completeJobBatchDelay 10.
 */
export const settings = {
  default: {},
  best: sweptBest("graphile", { concurrency: 100, localQueueSize: 1000, completeJobBatchDelay: 10 }),
  latency: {},
};

/** The sweep's grid (bench/sweep.js): concurrency × localQueue.size × completeJobBatchDelay (-1: off, the default). */
export const sweep = {
  concurrency: [8, 16, 24, 50, 100],
  localQueueSize: [-1, 200, 1000],
  completeJobBatchDelay: [-1, 10],
};

/** graphile-worker's `run()` options for flat knobs. */
export function options({ concurrency, localQueueSize, completeJobBatchDelay } = {}) {
  const worker = {};
  if (localQueueSize != null && localQueueSize > 0) worker.localQueue = { size: localQueueSize };
  if (completeJobBatchDelay != null && completeJobBatchDelay >= 0) worker.completeJobBatchDelay = completeJobBatchDelay;
  return { ...(concurrency != null ? { concurrency } : {}), ...(Object.keys(worker).length ? { preset: { worker } } : {}) };
}

/** A graphile-worker installation in its own schema; `connections`: its utils' pool size (10 when unset). */
export function create(ns, { connections } = {}) {
  let utils;
  const open = async () => (utils ??= await makeWorkerUtils({ connectionString: pgUrl, schema: ns, ...(connections ? { maxPoolSize: connections } : {}) }));
  return {
    async setup() {
      await dropSchema(ns);
      await (await open()).migrate();
    },
    async enqueueOne(payload) {
      await (await open()).addJob("bench", payload);
    },
    /** One job added in the caller's transaction (its SQL API, add_job), committed `holdMs` later. */
    async enqueueHeld(payload, holdMs) {
      await inHeldTransaction((c) => c.query(`SELECT "${ns}".add_job('bench', $1::json)`, [JSON.stringify(payload)]), holdMs);
    },
    async enqueueMany(payloads) {
      await (await open()).addJobs(payloads.map((payload) => ({ identifier: "bench", payload })));
    },
    async startWorker(mode, onJobs) {
      const { preset, ...rest } = options(knobsFor(settings, mode));
      const runner = await run({
        connectionString: pgUrl,
        schema: ns,
        noHandleSignals: true,
        logger: quietLogger,
        ...rest,
        ...(preset ? { preset } : {}),
        taskList: { bench: async (payload) => void onJobs([payload]) },
      });
      return { stop: () => runner.stop() };
    },
    async completed() {
      // Completed jobs are deleted: done = added − remaining.
      return withPg(async (c) => {
        const seq = (await c.query(`SELECT pg_get_serial_sequence($1, 'id') AS s`, [`"${ns}"._private_jobs`])).rows[0].s;
        const { rows } = await c.query(`SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ${seq}) - (SELECT count(*) FROM "${ns}"._private_jobs) AS done`);
        return Number(rows[0].done);
      });
    },
    /** The jobs not yet completed: graphile-worker deletes a job when it completes it. */
    probe: () => pgProbe(`SELECT count(*) AS n FROM "${ns}"._private_jobs`),
    async close() {
      await utils?.release();
      utils = undefined;
    },
    teardown: () => dropSchema(ns),
  };
}

import { Logger } from "graphile-worker";
const quietLogger = new Logger(() => (level, message) => {
  if (level === "error") console.error("graphile-worker:", message);
});
