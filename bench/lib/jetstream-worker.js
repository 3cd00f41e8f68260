// One worker process of the JetStream bench: a JetStreamQueue worker with a no-op handler;
// on SIGTERM it stops and sends the parent its count and first/last handler times
// (monoMs: comparable across processes).
import { monoMs, pgUrl } from "./common.js";
import { queueFor } from "./jetstream.js";

const { Errand, JetStreamQueue } = await import("../../dist/index.js");
const ns = process.argv[2];
const errand = await Errand.open({ connectionString: pgUrl, schema: ns, migrate: false, poolSize: 2 });
let count = 0;
let first;
let last;
const worker = new JetStreamQueue(errand, queueFor(ns)).worker({
  concurrency: Number(process.env.BENCH_JETSTREAM_CONCURRENCY ?? 100),
  handlers: {
    bench: () => {
      const now = monoMs();
      first ??= now;
      last = now;
      count++;
    },
  },
});
await worker.start();
process.send({ ready: true });
process.on("SIGTERM", async () => {
  await worker.stop();
  await errand.close();
  process.send({ count, first, last }, () => process.exit(0));
});
