import { Errand, PermanentError } from "errand";

// No URL: the embedded database in ./.errand/data. Set DATABASE_URL for a server.
const errand = await Errand.open({ connectionString: process.env.DATABASE_URL, schema: "quickstart" });

const { id } = await errand.enqueue("send_welcome_email", { userId: 42 }, { dedupeKey: "welcome:42" });

const worker = errand.worker({
  concurrency: 5,
  handlers: {
    send_welcome_email: async ({ userId }, ctx) => {
      if (!Number.isInteger(userId)) throw new PermanentError("userId must be an integer"); // no retries
      console.log(`attempt ${ctx.attempt}: emailing user ${userId} (idempotency key ${ctx.idempotencyKey})`);
    },
  },
});
await worker.start();

const job = await errand.waitFor(id, { timeoutMs: 10_000 }); // woken by the completion, no polling
console.log(`job ${id} is ${job.status}`);
await errand.close(); // stops the worker gracefully, then closes the connection
