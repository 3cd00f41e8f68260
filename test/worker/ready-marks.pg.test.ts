import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeEach, afterEach, expect, it } from "vitest";
import { Errand, type WorkerEvent } from "../../src/index.js";
import { queriesFor } from "../../src/sql/jobs.js";
import { eventually, freshSchema } from "../support/db.js";

// PostgreSQL only: transactions beside a raise of the ready marks (migration 028) need
// connections of their own. Whatever runs beside a raise, no job is left ready below the
// mark once its transaction commits.
const url = process.env.ERRAND_TEST_URL!;
const admin = new pg.Pool({ connectionString: url, max: 12 });
afterAll(() => admin.end());

let schema: string;
beforeEach(async () => {
  schema = freshSchema();
  await (await Errand.open({ connectionString: url, schema })).close();
});
afterEach(async () => {
  await admin.query(`DROP SCHEMA ${schema} CASCADE`);
});

const raise = (on: pg.Pool | pg.PoolClient = admin) => on.query(`SELECT ${schema}.raise_ready_mark('default', 0)`);
const markMs = async () => (await admin.query<{ ms: number | null }>(`SELECT (extract(epoch FROM ${schema}.ready_mark('default', 0)) * 1000)::float8 AS ms`)).rows[0]!.ms;
const firstReady = async () => (await admin.query<{ id: string }>(queriesFor(schema).firstReady.text, ["default", ["k"], 0])).rows.map((row) => String(row.id));
/** Ready jobs of the default queue and priority 0 below the mark: none, whatever ran. */
const belowMark = async () =>
  (
    await admin.query<{ id: string }>(
      `SELECT id::text FROM ${schema}.jobs WHERE status = 'ready' AND outcome IS NULL AND concurrency_key IS NULL AND queue = 'default' AND priority = 0
         AND run_at < coalesce(${schema}.ready_mark('default', 0), '-infinity')`,
    )
  ).rows.map((row) => row.id);

/** Runs `body` on a connection of its own, rolled back and released after. */
async function withConnection<T>(body: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await admin.connect();
  try {
    return await body(c);
  } finally {
    await c.query("ROLLBACK");
    c.release();
  }
}

it("stays below the start of a transaction in flight, whose jobs' run_at is no earlier", async () => {
  await withConnection(async (other) => {
    await other.query("BEGIN");
    const { rows } = await other.query<{ ms: number }>("SELECT (extract(epoch FROM now()) * 1000)::float8 AS ms");
    await eventually(async () => (await other.query("SELECT clock_timestamp() - now() > interval '300 milliseconds' AS old")).rows[0].old, 5_000, "the transaction to age");
    await raise();
    expect(await markMs()).toBeLessThanOrEqual(rows[0]!.ms - 100 + 0.001);
    const { rows: inserted } = await other.query<{ id: string }>(`INSERT INTO ${schema}.jobs (kind, payload) VALUES ('k', '{}') RETURNING id::text`);
    await other.query("COMMIT");
    expect(await firstReady()).toEqual([inserted[0]!.id]);
  });
});

it("is not raised while a transaction that wrote a job ready below its start is in flight", async () => {
  await raise();
  const before = await markMs();
  await withConnection(async (other) => {
    await other.query("BEGIN");
    const { rows } = await other.query<{ id: string }>(`INSERT INTO ${schema}.jobs (kind, payload, run_at) VALUES ('k', '{}', now() - interval '1 hour') RETURNING id::text`);
    await raise();
    expect(await markMs()).toBe(before);
    await other.query("COMMIT");
    expect(await firstReady()).toEqual([rows[0]!.id]);
  });
});

it("makes a writer of a job below it wait for a raise in flight, then lowers it", async () => {
  await raise();
  await withConnection(async (raiser) => {
    await withConnection(async (writer) => {
      await raiser.query("BEGIN");
      await raise(raiser);
      const { rows: pid } = await writer.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      const inserting = writer.query<{ id: string }>(`INSERT INTO ${schema}.jobs (kind, payload, run_at) VALUES ('k', '{}', now() - interval '1 hour') RETURNING id::text`);
      await eventually(async () => (await admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE pid = $1 AND NOT granted", [pid[0]!.pid])).rows[0].n === 1, 5_000, "the writer to wait");
      await raiser.query("COMMIT");
      const { rows } = await inserting;
      expect(await belowMark()).toEqual([]);
      expect(await firstReady()).toEqual([rows[0]!.id]);
    });
  });
});

it("is lowered by a REPEATABLE READ writer whose snapshot predates a raise", async () => {
  await raise();
  // A job below the mark lowers it: the writer's snapshot sees that lowering row, which
  // the raise below removes once the job is claimed. The writer must not take it for its own.
  const { rows: claimed } = await admin.query<{ id: string }>(`INSERT INTO ${schema}.jobs (kind, payload, run_at) VALUES ('k', '{}', now() - interval '2 minutes') RETURNING id::text`);
  await withConnection(async (writer) => {
    await writer.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
    expect((await writer.query(`SELECT count(*)::int AS n FROM ${schema}.ready_marks WHERE NOT raised`)).rows[0].n).toBe(1); // the snapshot
    await admin.query(`UPDATE ${schema}.jobs SET status = 'running', locked_by = 'w', locked_until = now() + interval '1 minute' WHERE id = $1`, [claimed[0]!.id]);
    await new Promise((resolve) => setTimeout(resolve, 5)); // the raise below must read a later now()
    await raise();
    expect((await admin.query(`SELECT count(*)::int AS n FROM ${schema}.ready_marks WHERE NOT raised`)).rows[0].n).toBe(0);
    const { rows } = await writer.query<{ id: string }>(`INSERT INTO ${schema}.jobs (kind, payload, run_at) VALUES ('k', '{}', now() - interval '1 minute') RETURNING id::text`);
    await writer.query("COMMIT");
    expect(await belowMark()).toEqual([]);
    expect(await firstReady()).toEqual([rows[0]!.id]);
  });
});

it("is raised, and errand's worker runs, where a publication covers errand's tables (logical replication, change data capture)", async () => {
  const publication = `${schema}_pub`;
  await admin.query(`CREATE PUBLICATION ${publication} FOR TABLES IN SCHEMA ${schema}`);
  const errand = await Errand.open({ connectionString: url, schema, poolSize: 2 });
  const events: WorkerEvent[] = [];
  const worker = errand.worker({ pollIntervalMs: 50, onEvent: (event) => void events.push(event), handlers: { k: async () => {} } });
  try {
    await raise();
    await admin.query(`INSERT INTO ${schema}.jobs (kind, payload, run_at) VALUES ('k', '{}', now() - interval '1 day')`); // lowers the mark
    await worker.start();
    // The worker's probes raise the mark again past the job it ran (a DELETE and an UPDATE of ready_marks).
    await eventually(async () => {
      await errand.enqueue("k", {});
      const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.jobs WHERE status = 'ready'`);
      const mark = await markMs();
      return rows[0]!.n === 0 && mark !== null && mark > Date.now() - 60_000;
    }, 10_000, "the worker to run every job and raise the mark");
    expect(events.filter((event) => event.type === "error")).toEqual([]);
  } finally {
    await worker.stop();
    await errand.close();
    await admin.query(`DROP PUBLICATION ${publication}`);
  }
});

it("is not raised where a session is hidden from errand's role (its transaction's start unknown)", async () => {
  const role = `errand_marks_${randomBytes(4).toString("hex")}`;
  await admin.query(`CREATE ROLE ${role}`);
  try {
    await admin.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}; GRANT ALL ON ALL TABLES IN SCHEMA ${schema} TO ${role}`);
    await withConnection(async (hidden) => {
      await hidden.query("BEGIN"); // a session of postgres's, in flight
      await hidden.query("SELECT 1");
      await withConnection(async (c) => {
        await c.query(`SET ROLE ${role}`);
        await raise(c);
        await c.query("RESET ROLE");
      });
    });
    expect(await markMs()).toBeNull();
  } finally {
    await admin.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
  }
});

it("leaves no job ready below it, whatever writers run beside the raises (randomised)", async () => {
  // Writers: jobs at now() (their transaction's start), in the past, given back with their
  // old run_at, in transactions held open for a while, READ COMMITTED and REPEATABLE READ;
  // raises go on from other connections all along. Checked after every writer has finished.
  const deadline = Date.now() + 2_000;
  let seed = 42;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const writer = async (): Promise<void> => {
    while (Date.now() < deadline) {
      await withConnection(async (c) => {
        await c.query(random() < 0.3 ? "BEGIN ISOLATION LEVEL REPEATABLE READ" : "BEGIN");
        await writeOnce(c).catch((error: { code?: string }) => {
          if (error.code !== "40001") throw error; // a REPEATABLE READ update may fail to serialise
        });
      });
    }
  };
  const writeOnce = async (c: pg.PoolClient): Promise<void> => {
    await c.query("SELECT 1");
    if (random() < 0.5) await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 150)));
    const pick = random();
    if (pick < 0.4) await c.query(`INSERT INTO ${schema}.jobs (kind, payload) VALUES ('k', '{}')`);
    else if (pick < 0.7) await c.query(`INSERT INTO ${schema}.jobs (kind, payload, run_at) VALUES ('k', '{}', now() - $1 * interval '1 millisecond')`, [Math.floor(random() * 5_000)]);
    else if (pick < 0.85) await c.query(`UPDATE ${schema}.jobs SET status = 'running', locked_by = 'w', locked_until = now() + interval '1 minute' WHERE id = (SELECT id FROM ${schema}.jobs WHERE status = 'ready' ORDER BY random() LIMIT 1)`);
    else await c.query(`UPDATE ${schema}.jobs SET status = 'ready', locked_by = NULL, locked_until = NULL WHERE id = (SELECT id FROM ${schema}.jobs WHERE status = 'running' ORDER BY random() LIMIT 1)`);
    if (random() < 0.5) await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 150)));
    await c.query("COMMIT");
  };
  const raiser = async (): Promise<number> => {
    let raises = 0;
    while (Date.now() < deadline) {
      await raise();
      raises++;
      expect(await belowMark()).toEqual([]);
    }
    return raises;
  };
  const [raises] = await Promise.all([raiser(), raiser(), ...Array.from({ length: 6 }, writer)]);
  expect(raises).toBeGreaterThan(10);
  await raise();
  expect(await belowMark()).toEqual([]);
  const ready = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.jobs WHERE status = 'ready'`);
  expect(ready.rows[0]!.n).toBeGreaterThan(0);
});
