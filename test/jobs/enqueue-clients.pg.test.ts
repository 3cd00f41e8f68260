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

  it("prepares its statements once per connection of the application's pg client or pool", async () => {
    const prepared = async (db: pg.Client | pg.Pool) =>
      (await db.query<{ name: string }>(`SELECT name FROM pg_prepared_statements WHERE statement LIKE '%${t.schema}%' ORDER BY name`)).rows.map((row) => row.name);
    const client = new pg.Client({ connectionString: process.env.ERRAND_TEST_URL });
    await client.connect();
    const pool = new pg.Pool({ connectionString: process.env.ERRAND_TEST_URL, max: 1 });
    try {
      await client.query("BEGIN");
      for (let n = 0; n < 3; n++) await t.errand.enqueue("k", { n }, { db: client });
      await t.errand.enqueue("k", { n: 3 }, { db: client, dedupeKey: "once" });
      await client.query("COMMIT");
      // The plain enqueue and the keyed one, each parsed once for four enqueues.
      expect(await prepared(client)).toHaveLength(2);
      await t.errand.enqueueMany([{ kind: "k", payload: 4 }], { db: pool });
      expect(await prepared(pool)).toHaveLength(1);
      expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: 5 }]);
    } finally {
      await client.end();
      await pool.end();
    }
  });
});
