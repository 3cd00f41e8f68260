// Shared helpers for the bench: connection settings, a high-resolution wall clock that
// agrees across processes, statistics and a small pg helper.
import pg from "pg";

/** PostgreSQL every system uses (same server, same settings). */
export const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
/** Redis for BullMQ. */
export const redis = { host: process.env.BENCH_REDIS_HOST ?? "127.0.0.1", port: Number(process.env.BENCH_REDIS_PORT ?? 6379) };

/**
 * Milliseconds on the machine's monotonic clock (libuv's, CLOCK_MONOTONIC), with
 * sub-millisecond precision: one clock for every process, so a time taken in a child
 * compares with one taken here. `performance.timeOrigin + performance.now()` does not: each
 * process fixes its offset from the wall clock at its start, and a wall clock being slewed
 * (as after a virtual machine resumes; 5 ms a second was seen here) then puts a child
 * started later tens of milliseconds off.
 */
export function monoMs() {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Median of numbers (null when empty). */
export function median(values) {
  const xs = values.filter((v) => typeof v === "number" && Number.isFinite(v)).sort((a, b) => a - b);
  if (xs.length === 0) return null;
  const mid = Math.floor(xs.length / 2);
  return xs.length % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2;
}

/** The p-th percentile (0–100) of numbers, nearest rank. */
export function percentile(values, p) {
  const xs = [...values].sort((a, b) => a - b);
  if (xs.length === 0) return null;
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))];
}

/** Runs `fn` with a short-lived pg client. */
export async function withPg(fn) {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * The tail probe of a PostgreSQL system (see processJobs): a client connected before the
 * run, its catalogue caches warmed by planning `sql` once (not by running it: that would
 * read every waiting job's index entry, and mark dead the entries the history scenarios'
 * claims must find unmarked), so the tail's first poll waits for neither; `unfinished()` runs `sql` (one row,
 * column n: the seeded jobs not yet recorded as completed). The planner is kept to indexes
 * on this session only: the tables' statistics date from the seed, when every job was
 * waiting, so it would scan the whole table, where at the tail the partial indexes of
 * waiting and running jobs hold a few rows.
 */
export async function pgProbe(sql) {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  await client.query("SET enable_seqscan = off; SET enable_bitmapscan = off; SET max_parallel_workers_per_gather = 0");
  await client.query(`EXPLAIN ${sql}`);
  return {
    unfinished: async () => Number((await client.query(sql)).rows[0].n),
    close: () => client.end(),
  };
}

/**
 * ANALYZE every table of `schema`: what autovacuum would have done after a fill this big,
 * which this machine's server, with autovacuum off, does not. Without statistics the
 * planner may sort the whole queue for every claim (the seed's table did: 68 ms a claim of
 * 100 on 100,000 rows, against 0.4 ms analysed).
 */
export function analyzeSchema(schema) {
  return withPg(async (c) => {
    const { rows } = await c.query("SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname = $1", [schema]);
    if (rows.length > 0) await c.query(`ANALYZE ${rows.map((r) => r.t).join(", ")}`);
  });
}

/** Drops a schema if it exists. */
export function dropSchema(schema) {
  return withPg((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** The namespace in which worker process `index` of a run in `ns` warms up (see warmUp in bench/child.js). */
export const warmNamespace = (ns, index) => `${ns}_w${index}`;

/** Splits `n` items into chunks of `size`, produced by `make(i)`. */
export function* chunks(n, size, make) {
  for (let start = 0; start < n; start += size) {
    const batch = [];
    for (let i = start; i < Math.min(n, start + size); i++) batch.push(make(i));
    yield batch;
  }
}

/**
 * Runs `insert(client)` in a transaction on a connection of its own, committed `holdMs`
 * later: a web request that enqueues its job early and commits after its other work.
 * Resolves at the commit (the connection closes after).
 */
export async function inHeldTransaction(insert, holdMs) {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    await client.query("BEGIN");
    await insert(client);
    await sleep(holdMs);
    await client.query("COMMIT");
  } finally {
    void client.end();
  }
}

/** Resolves after `ms`. */
export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
