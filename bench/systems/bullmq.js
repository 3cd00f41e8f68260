// BullMQ 6 on Redis; each measurement gets its own key prefix, removed afterwards.
import { Queue, Worker } from "bullmq";
import IORedis from "ioredis";
import { redis } from "../lib/common.js";

/** Worker settings per mode (the best: concurrency 100). */
export const settings = {
  default: {},
  best: { concurrency: 100 },
  latency: {},
};

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
      const worker = new Worker("bench", async (job) => void onJobs([job.data]), { connection: connection(), prefix: ns, ...settings[mode] });
      worker.on("error", (error) => console.error("bullmq worker error", error));
      await worker.waitUntilReady();
      return { stop: () => worker.close() };
    },
    async completed() {
      const counts = await open().getJobCounts("completed");
      return counts.completed;
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
