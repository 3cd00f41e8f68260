#!/usr/bin/env node
// What a job's completion costs PostgreSQL in each table shape (issue 14: "a cheaper shape,
// not a faster loop"). Every shape starts from errand's own jobs table (the migrations'
// schema, its indexes and triggers) filled with `--jobs` ready jobs, and runs the same
// claim — errand's, FOR UPDATE SKIP LOCKED over the ready index, `--batch` at a time —
// on one connection; only the completion differs:
//
//   update     errand's: UPDATE to done, the row stays (every index gets a new entry)
//   update50   the same on half-filled pages (fillfactor 50: the updates stay on the row's page)
//   move       DELETE … RETURNING from jobs, INSERT into a history table with a primary key
//   movebrin   the same, the history table with only a BRIN index on finished_at
//   delete     DELETE, nothing kept (graphile-worker's shape)
//   moveplain  move, on a jobs table without the seed's `dedupe_key text UNIQUE` (every row
//              version, NULL keys included, has an entry in that index: one per claim)
//   movenodedup  move, with that index's btree deduplication off (its NULL entries are
//              all equal, and were merged into posting lists again and again)
//   movehot    move, with a claim PostgreSQL can write in place (HOT): no index names a column
//              the claim changes (the ready index without `status` in its predicate, no
//              lease or state indexes) and pages 45 % full, so the new version fits beside
//              the old. An upper bound: with no running rows the claim's read of the ready
//              index skips nothing, where a worker's would step over the jobs it holds.
//   movebatch  move, but the history keeps one row per completion, not per job: the batch's
//              rows as one array of the jobs table's row type (TOASTed, pglz), its first and
//              last id (a btree on the first, for a lookup by id) and finished_at. Where
//              each moved job costs a heap insert and its index entries, a batch costs one.
//   movebatchlz4  the same, the array compressed with lz4
//   …held      (movehotheld, moveheld) the same, each batch completed only after the next
//              claim: the claim reads from the start of the ready index over the batch
//              still running, as a worker without a claim floor would over its buffer.
//
// Reported per job: the backend's CPU (from /proc, claim and completion together) and the
// rate. Rounds are interleaved. PostgreSQL must run on this machine (its /proc).
//
//   node bench/shapes.js [--jobs 50000] [--batch 1000] [--rounds 3] [--shapes update,move]
import { parseArgs } from "node:util";
import pg from "pg";
import { errandClass } from "./systems/errand.js";
import { dropSchema, median, pgUrl } from "./lib/common.js";
import { postgresCpu } from "./lib/pg-cpu.js";

const { values: args } = parseArgs({
  options: {
    jobs: { type: "string", default: "50000" },
    batch: { type: "string", default: "1000" },
    rounds: { type: "string", default: "3" },
    shapes: { type: "string", default: "update,update50,move,movebrin,delete" },
  },
});
const jobs = Number(args.jobs);
const batch = Number(args.batch);

/** CPU seconds one backend has spent (see pg-cpu.js). */
function cpuSeconds(pid) {
  const seconds = postgresCpu().get(pid);
  if (seconds === undefined) throw new Error(`backend ${pid} is not among this machine's postgres processes`);
  return seconds;
}

/** The history table's columns, in the jobs table's order, as a moved row is written (done now). */
const historyRow = `id, kind, payload, 'done', priority, attempts, max_attempts, run_at, NULL, NULL, last_error, errors, retry,
  dedupe_key, created_at, started_at, now(), timeout_ms, checkpoint, result, progress, queue, dedupe_mode, dedupe_until,
  batch_id, concurrency_key`;

function completion(shape, s) {
  const held = "j.id = ANY($1::bigint[]) AND j.status = 'running' AND j.locked_by = 'w'";
  if (shape.startsWith("update")) return `UPDATE ${s}.jobs j SET status = 'done', locked_until = NULL, locked_by = NULL, finished_at = now() WHERE ${held}`;
  if (shape === "delete") return `DELETE FROM ${s}.jobs j WHERE ${held}`;
  if (shape.startsWith("movebatch")) {
    return `WITH moved AS (DELETE FROM ${s}.jobs j WHERE ${held} RETURNING j.*)
      INSERT INTO ${s}.history (first_id, last_id, jobs) SELECT min(id), max(id), array_agg(ROW(moved.*)::${s}.jobs) FROM moved HAVING count(*) > 0`;
  }
  return `WITH moved AS (DELETE FROM ${s}.jobs j WHERE ${held} RETURNING j.*) INSERT INTO ${s}.history SELECT ${historyRow} FROM moved`;
}

async function run(shape, round) {
  const s = `bench_shape_${shape}_${round}`;
  await dropSchema(s);
  await (await (await errandClass()).open({ connectionString: pgUrl, schema: s, migrate: true })).close();
  const c = new pg.Client(pgUrl);
  await c.connect();
  try {
    if (shape === "update50") await c.query(`ALTER TABLE ${s}.jobs SET (fillfactor = 50)`);
    if (shape.startsWith("movebatch")) {
      const compression = shape === "movebatchlz4" ? "lz4" : "pglz";
      await c.query(`CREATE TABLE ${s}.history (finished_at timestamptz NOT NULL DEFAULT now(), first_id bigint NOT NULL, last_id bigint NOT NULL,
        jobs ${s}.jobs[] COMPRESSION ${compression} NOT NULL)`);
      await c.query(`CREATE INDEX ON ${s}.history (first_id)`);
    } else if (shape.startsWith("move")) {
      await c.query(`CREATE TABLE ${s}.history (LIKE ${s}.jobs INCLUDING DEFAULTS)`);
      if (shape !== "movebrin") await c.query(`ALTER TABLE ${s}.history ADD PRIMARY KEY (id)`);
    }
    if (shape === "moveplain") await c.query(`ALTER TABLE ${s}.jobs DROP CONSTRAINT jobs_dedupe_key_key`);
    if (shape === "movenodedup") await c.query(`ALTER INDEX ${s}.jobs_dedupe_key_key SET (deduplicate_items = off)`);
    if (shape === "movebrin") await c.query(`CREATE INDEX ON ${s}.history USING brin (finished_at)`);
    if (shape.startsWith("movehot")) {
      const { rows } = await c.query(
        `SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid = '${s}.jobs'::regclass AND NOT indisunique AND indexrelid::regclass::text NOT LIKE '%jobs_batch'`,
      );
      for (const { name } of rows) await c.query(`DROP INDEX ${name}`);
      await c.query(`CREATE INDEX jobs_ready_hot ON ${s}.jobs (queue, priority DESC, run_at, id) WHERE concurrency_key IS NULL`);
      await c.query(`ALTER TABLE ${s}.jobs SET (fillfactor = 45)`);
    }
    await c.query(`INSERT INTO ${s}.jobs (kind, payload) SELECT 'x', jsonb_build_object('i', g) FROM generate_series(1, $1) g`, [jobs]);
    await c.query(`VACUUM ANALYZE ${s}.jobs`);
    const claim = `WITH next AS (SELECT ctid FROM ${s}.jobs WHERE status = 'ready' AND outcome IS NULL AND queue = 'default' AND concurrency_key IS NULL AND run_at <= now()
        ORDER BY priority DESC, run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED)
      UPDATE ${s}.jobs j SET status = 'running', attempts = j.attempts + 1, locked_by = 'w', locked_until = now() + interval '5 minutes', started_at = now()
      WHERE j.ctid = ANY(ARRAY(SELECT ctid FROM next)) RETURNING j.id, j.kind, j.payload`;
    const complete = completion(shape, s);
    const pid = (await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
    const cpuBefore = cpuSeconds(pid);
    const start = performance.now();
    let done = 0;
    let held = [];
    for (;;) {
      const { rows } = await c.query({ name: "claim", text: claim, values: [batch] });
      const ids = shape.endsWith("held") ? held : rows.map((row) => String(row.id));
      if (shape.endsWith("held")) held = rows.map((row) => String(row.id));
      if (ids.length > 0) await c.query({ name: "complete", text: complete, values: [ids] });
      done += ids.length;
      if (rows.length === 0) break;
    }
    const ms = performance.now() - start;
    if (done !== jobs) throw new Error(`${shape}: ${done} of ${jobs} jobs completed`);
    return { rate: (done / ms) * 1000, cpuUs: ((cpuSeconds(pid) - cpuBefore) / done) * 1e6 };
  } finally {
    await c.end();
    await dropSchema(s);
  }
}

const shapes = args.shapes.split(",");
const results = new Map(shapes.map((shape) => [shape, []]));
for (let round = 0; round < Number(args.rounds); round++) {
  for (const shape of shapes) {
    const result = await run(shape, round);
    results.get(shape).push(result);
    console.error(`  ${shape} round ${round}: ${result.rate.toFixed(0)} jobs/s, backend ${result.cpuUs.toFixed(1)} µs/job`);
  }
}
const base = median(results.get(shapes[0]).map((r) => r.cpuUs));
console.log(`| Completion shape | jobs/s (median) | backend CPU per job, claim + completion (median) | × ${shapes[0]} |`);
console.log("| --- | --- | --- | --- |");
for (const [shape, runs] of results) {
  const cpu = median(runs.map((r) => r.cpuUs));
  console.log(`| ${shape} | ${median(runs.map((r) => r.rate)).toFixed(0)} | ${cpu.toFixed(1)} µs | ${(cpu / base).toFixed(2)} |`);
}
