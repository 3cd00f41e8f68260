import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import { eventually, freshSchema } from "../support/db.js";

// PostgreSQL only: many connections claiming at once is what SKIP LOCKED is for.
const url = process.env.ERRAND_TEST_URL!;
const admin = new pg.Pool({ connectionString: url, max: 4 });
afterAll(() => admin.end());

describe("claiming under contention", () => {
  it("never hands one job to two of eight competing workers", async () => {
    const schema = freshSchema();
    const producer = await Errand.open({ connectionString: url, schema, poolSize: 2 });
    await admin.query(`CREATE TABLE ${schema}.effects (job_id bigint NOT NULL, worker text NOT NULL)`);
    const total = 3000;
    await producer.enqueueMany(Array.from({ length: total }, (_, i) => ({ kind: "work", payload: { i } })));
    const clients = await Promise.all(Array.from({ length: 8 }, () => Errand.open({ connectionString: url, schema, poolSize: 3 })));
    const effects = new pg.Pool({ connectionString: url, max: 8 });
    const workers = clients.map((client, n) =>
      client.worker({
        workerId: `w${n}`,
        concurrency: 4,
        prefetch: 12,
        handlers: {
          work: async (_: unknown, ctx) => {
            await effects.query(`INSERT INTO ${schema}.effects (job_id, worker) VALUES ($1, $2)`, [ctx.id, `w${n}`]);
          },
        },
      }),
    );
    try {
      await Promise.all(workers.map((w) => w.start()));
      await eventually(
        async () => (await admin.query(`SELECT count(*)::int AS n FROM ${schema}.all_jobs WHERE status = 'done'`)).rows[0].n === total,
        60_000,
        "every job done",
      );
      const { rows } = await admin.query(`SELECT count(*)::int AS runs, count(DISTINCT job_id)::int AS jobs, count(DISTINCT worker)::int AS workers FROM ${schema}.effects`);
      expect(rows[0]).toMatchObject({ runs: total, jobs: total });
      expect(rows[0].workers).toBeGreaterThan(1);
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
      await Promise.all([...clients, producer].map((c) => c.close()));
      await effects.end();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });

  it("gives disjoint batches to 20 simultaneous claim statements", async () => {
    const schema = freshSchema();
    const errand = await Errand.open({ connectionString: url, schema, poolSize: 2 });
    await errand.enqueueMany(Array.from({ length: 500 }, (_, i) => ({ kind: "k", payload: { i } })));
    const pool = new pg.Pool({ connectionString: url, max: 20 });
    try {
      const claim = `WITH next AS (SELECT id FROM ${schema}.jobs WHERE status = 'ready' AND run_at <= now()
          ORDER BY priority DESC, run_at, id LIMIT 40 FOR UPDATE SKIP LOCKED)
        UPDATE ${schema}.jobs j SET status = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes'
        FROM next WHERE j.id = next.id RETURNING j.id`;
      const batches = await Promise.all(Array.from({ length: 20 }, () => pool.query(claim)));
      const ids = batches.flatMap((b) => b.rows.map((r: { id: string }) => r.id));
      expect(ids).toHaveLength(500);
      expect(new Set(ids).size).toBe(500);
    } finally {
      await pool.end();
      await errand.close();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    }
  });
});
