import pg from "pg";
import { describe, expect, it } from "vitest";
import { useTestErrand } from "../support/db.js";

// PostgreSQL only: the pg client shapes an application may hand to enqueue.
const t = useTestErrand();

describe("enqueue through the application's own pg connections", () => {
  it("joins a transaction on a standalone pg.Client: commit keeps the job, rollback drops it", async () => {
    const client = new pg.Client({ connectionString: process.env.ERRAND_TEST_URL });
    await client.connect();
    try {
      await client.query("BEGIN");
      const kept = await t.errand.enqueue("k", { n: 1 }, { db: client });
      await client.query("COMMIT");
      await client.query("BEGIN");
      const dropped = await t.errand.enqueue("k", { n: 2 }, { db: client });
      await client.query("ROLLBACK");
      expect(await t.errand.getJob(kept.id)).toMatchObject({ payload: { n: 1 } });
      expect(await t.errand.getJob(dropped.id)).toBeNull();
    } finally {
      await client.end();
    }
  });

  it("accepts a pg.Pool as db (each enqueue commits on its own)", async () => {
    const pool = new pg.Pool({ connectionString: process.env.ERRAND_TEST_URL, max: 2 });
    try {
      const results = await t.errand.enqueueMany([{ kind: "k", payload: 1 }, { kind: "k", payload: 2 }], { db: pool });
      expect(results.map((r) => r.duplicate)).toEqual([false, false]);
      expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: 2 }]);
    } finally {
      await pool.end();
    }
  });
});
