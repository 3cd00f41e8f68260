// The raw-SQL ceiling: the seed article's jobs table, claimed and completed 100 rows per
// statement by plain `pg` loops (named statements), no library in between.
import pg from "pg";
import { dropSchema, pgProbe, pgUrl, withPg } from "../lib/common.js";

/** Loops (connections) and rows per statement per mode. */
export const settings = {
  default: { clients: 1, batch: 100 },
  best: { clients: Number(process.env.BENCH_RAW_CLIENTS ?? 4), batch: 100 },
  latency: { clients: 1, batch: 100 },
};

/** The seed's table in its own schema; `connections`: its pool size (10 when unset). */
export function create(ns, { connections = 10 } = {}) {
  const t = `"${ns}".jobs`;
  let pool;
  const open = () => (pool ??= new pg.Pool({ connectionString: pgUrl, max: connections }));
  const insert = { name: `raw_insert_${ns}`, text: `INSERT INTO ${t} (kind, payload) SELECT 'bench', p FROM unnest($1::jsonb[]) AS p` };
  return {
    async setup() {
      await dropSchema(ns);
      await withPg(async (c) => {
        await c.query(`CREATE SCHEMA "${ns}"`);
        await c.query(`CREATE TABLE ${t} (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, kind text NOT NULL, payload jsonb NOT NULL,
          status text NOT NULL DEFAULT 'ready', attempts int NOT NULL DEFAULT 0, max_attempts int NOT NULL DEFAULT 8,
          run_at timestamptz NOT NULL DEFAULT now(), locked_until timestamptz, last_error text, dedupe_key text UNIQUE)`);
        await c.query(`CREATE INDEX ON ${t} (run_at) WHERE status IN ('ready', 'running')`);
      });
    },
    async enqueueOne(payload) {
      await open().query({ name: `raw_one_${ns}`, text: `INSERT INTO ${t} (kind, payload) VALUES ('bench', $1)`, values: [payload] });
    },
    async enqueueMany(payloads) {
      await open().query({ ...insert, values: [payloads.map((p) => JSON.stringify(p))] });
    },
    async startWorker(mode, onJobs) {
      const { clients, batch } = settings[mode];
      const claim = {
        name: `raw_claim_${ns}`,
        text: `UPDATE ${t} SET status = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes'
               WHERE id IN (SELECT id FROM ${t} WHERE status = 'ready' AND run_at <= now() ORDER BY run_at LIMIT $1 FOR UPDATE SKIP LOCKED)
               RETURNING id, kind, payload, attempts`,
      };
      const complete = { name: `raw_done_${ns}`, text: `UPDATE ${t} SET status = 'done', locked_until = NULL WHERE id = ANY($1::bigint[])` };
      const workerPool = new pg.Pool({ connectionString: pgUrl, max: clients });
      let stopping = false;
      const loop = async () => {
        while (!stopping) {
          const { rows } = await workerPool.query({ ...claim, values: [batch] });
          if (rows.length === 0) {
            await new Promise((resolve) => setTimeout(resolve, 5));
            continue;
          }
          onJobs(rows.map((row) => row.payload));
          await workerPool.query({ ...complete, values: [rows.map((row) => row.id)] });
        }
      };
      const loops = Array.from({ length: clients }, loop);
      return {
        async stop() {
          stopping = true;
          await Promise.all(loops);
          await workerPool.end();
        },
      };
    },
    async completed() {
      return withPg(async (c) => Number((await c.query(`SELECT count(*) FROM ${t} WHERE status = 'done'`)).rows[0].count));
    },
    /** The jobs not yet done (the table's one partial index holds them). */
    probe: () => pgProbe(`SELECT count(*) AS n FROM ${t} WHERE status IN ('ready', 'running')`),
    async close() {
      await pool?.end();
      pool = undefined;
    },
    teardown: () => dropSchema(ns),
  };
}
