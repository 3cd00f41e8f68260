// The raw-SQL ceiling: the seed article's jobs table, claimed and completed 100 rows per
// statement by plain `pg` loops (named statements), no library in between. For the latency
// scenarios (`notify`, and the worker's "latency" mode) the table's inserts notify and one
// connection listens, claims once per notice and completes: the least pickup latency a
// PostgreSQL queue can have here, whatever else it does.
import pg from "pg";
import { dropSchema, pgProbe, pgUrl, withPg } from "../lib/common.js";

/** Loops (connections) and rows per statement per mode. */
export const settings = {
  default: { clients: 1, batch: 100 },
  best: { clients: Number(process.env.BENCH_RAW_CLIENTS ?? 4), batch: 100 },
  latency: { clients: 1, batch: 100 },
};

/**
 * The seed's table in its own schema; `connections`: its pool size (10 when unset);
 * `notify`: setup adds a trigger that notifies the latency worker once per inserting statement.
 */
export function create(ns, { connections = 10, notify = false } = {}) {
  const t = `"${ns}".jobs`;
  const channel = `${ns}_jobs`;
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
        if (notify) {
          await c.query(`CREATE FUNCTION "${ns}".notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_notify('${channel}', ''); RETURN NULL; END $$`);
          await c.query(`CREATE TRIGGER jobs_notify AFTER INSERT ON ${t} FOR EACH STATEMENT EXECUTE FUNCTION "${ns}".notify_jobs()`);
        }
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
      if (mode === "latency") return listeningWorker(channel, claim, complete, batch, onJobs);
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

/**
 * The latency worker: one connection that listens on the table's channel and, woken by a
 * notice (or, should none come, every second), claims until a claim comes back short,
 * completing each batch before the next claim. A notice that arrives during a claim whose
 * snapshot may predate its insert's commit claims once more.
 */
async function listeningWorker(channel, claim, complete, batch, onJobs) {
  const client = new pg.Client(pgUrl);
  await client.connect();
  let stopping = false;
  let woken = false;
  let wake = () => {};
  client.on("notification", () => {
    woken = true;
    wake();
  });
  await client.query(`LISTEN "${channel}"`);
  const loop = (async () => {
    while (!stopping) {
      woken = false;
      const { rows } = await client.query({ ...claim, values: [batch] });
      if (rows.length > 0) {
        onJobs(rows.map((row) => row.payload));
        await client.query({ ...complete, values: [rows.map((row) => row.id)] });
      }
      if (rows.length === batch || woken || stopping) continue;
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, 1000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = () => {};
    }
  })();
  return {
    async stop() {
      stopping = true;
      wake();
      await loop;
      await client.end();
    },
  };
}
