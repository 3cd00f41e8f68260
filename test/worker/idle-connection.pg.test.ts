import pg from "pg";
import { expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import { eventually, useTestErrand } from "../support/db.js";

// PostgreSQL only: the embedded database has one connection whatever the worker does.
// An idle worker holds its listening connection only: its pool's close after their idle
// timeout, and its statements then run on the listening one (see pgDriver).
const t = useTestErrand();

it("an idle worker holds only its listening connection, and runs a job without opening another", async () => {
  // A short idle timeout, so the test need not wait the default 10 s for the pool to empty.
  const pool = new pg.Pool({ connectionString: process.env.ERRAND_TEST_URL, max: 4, idleTimeoutMillis: 100 });
  let opened = 0;
  pool.on("connect", () => void opened++);
  const errand = await Errand.open({ db: pool, schema: t.schema });
  const ran: string[] = [];
  const worker = errand.worker({ handlers: { ping: async (_payload, ctx) => void ran.push(ctx.id) } });
  try {
    await worker.start();
    await eventually(() => pool.totalCount === 0, 10_000, "the pool's start-up connections to close");
    const before = opened;
    const { id } = await t.errand.enqueue("ping", {});
    await eventually(() => ran.includes(id), 10_000, "the job to run");
    // Its claim and its completion ran on the listening connection.
    await eventually(async () => (await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs`))[0]?.status === "done", 10_000, "the job's outcome to be written");
    expect(opened).toBe(before);
  } finally {
    await worker.stop();
    await errand.close();
    await pool.end();
  }
});
