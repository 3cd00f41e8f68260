// BullMQ 6 on Redis; each measurement gets its own key prefix, removed afterwards.
import { Queue, Worker } from "bullmq";
import IORedis from "ioredis";
import { redis } from "../lib/common.js";
import { knobsFor, sweptBest } from "../lib/peer-settings.js";

/** Worker options per mode. "best": what `npm run bench:sweep` found (bench/peer-settings.json), else concurrency 100. */
export const settings = {
  default: {},
  best: sweptBest("bullmq", { concurrency: 100 }),
  latency: {},
};

/**
 * The sweep's grid (bench/sweep.js): the worker's concurrency, and the Redis protocol its
 * connection speaks (ioredis 6 speaks RESP3 unless given `protocol: 2`, v5's).
 */
export const sweep = { concurrency: [10, 50, 100, 200, 500], protocol: ["resp3", "resp2"] };

/** The knobs are BullMQ's own Worker options, but `protocol`, which is the worker's connection's (see {@link connection}). */
export const options = ({ protocol: _protocol, ...knobs }) => knobs;

/** A connection as BullMQ's workers need it; `protocol` "resp2": ioredis's `protocol: 2`, else its default (RESP3). */
const connection = (protocol) => new IORedis({ ...redis, maxRetriesPerRequest: null, ...(protocol === "resp2" ? { protocol: 2 } : {}) });

/** A BullMQ queue under its own prefix. */
export function create(ns) {
  let queue;
  const open = () => (queue ??= new Queue("bench", { connection: connection(), prefix: ns }));
  return {
    async setup() {
      await open().obliterate({ force: true });
    },
    async enqueueOne(payload) {
      await open().add("bench", payload);
    },
    async enqueueMany(payloads) {
      await open().addBulk(payloads.map((data) => ({ name: "bench", data })));
    },
    async startWorker(mode, onJobs) {
      const knobs = knobsFor(settings, mode);
      const worker = new Worker("bench", async (job) => void onJobs([job.data]), { connection: connection(knobs.protocol), prefix: ns, ...options(knobs) });
      worker.on("error", (error) => console.error("bullmq worker error", error));
      await worker.waitUntilReady();
      return { stop: () => worker.close() };
    },
    async completed() {
      const counts = await open().getJobCounts("completed");
      return counts.completed;
    },
    /** `seeded` minus the completed set's size (a ZCARD), on a queue connected before the run. */
    async probe(seeded) {
      // Connection options, not an instance: the queue owns the connection and closes it.
      const probing = new Queue("bench", { connection: { ...redis, maxRetriesPerRequest: null }, prefix: ns });
      await probing.getJobCounts("completed"); // connects and loads the script the tail runs
      return {
        unfinished: async () => seeded - (await probing.getJobCounts("completed")).completed,
        close: () => probing.close(),
      };
    },
    async close() {
      await queue?.close();
      queue = undefined;
    },
    async teardown() {
      await open().obliterate({ force: true });
      await this.close();
    },
  };
}
