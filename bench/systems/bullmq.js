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

/** The sweep's grid (bench/sweep.js). */
export const sweep = { concurrency: [10, 50, 100, 200, 500] };

/** The knobs are BullMQ's own Worker options. */
export const options = (knobs) => knobs;

const connection = () => new IORedis({ ...redis, maxRetriesPerRequest: null });

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
      const worker = new Worker("bench", async (job) => void onJobs([job.data]), { connection: connection(), prefix: ns, ...options(knobsFor(settings, mode)) });
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
