// The scenarios. Each `measure(system, ns, cfg)` sets up a fresh namespace for `system`,
// measures once and returns { value, ...details }; run.js interleaves systems and runs.
import { analyzeSchema, dropSchema, percentile, pgUrl, sleep, monoMs, warmNamespace, withPg } from "./common.js";
import { runWorkers, spawnChild } from "./children.js";
import { backendsOf, cpuBetween, postgresCpu, samplePostgresCpu } from "./pg-cpu.js";
import { runPgbench } from "./pgbench.js";
import { relayThroughput } from "./relay.js";
import { jetstreamJobs } from "./jetstream.js";

/** `producer.connections`: the size of the enqueuing client's pool (the systems' own default when unset). */
async function adapterFor(system, ns, producer = {}) {
  return (await import(`../systems/${system}.js`)).create(ns, producer);
}

/**
 * One system's adapters in several namespaces, used as one (processJobs' `schemaEach`): set
 * up, probed, counted and dropped together; `parts` to fill each on its own.
 */
async function spread(system, namespaces) {
  const parts = await Promise.all(namespaces.map((n) => adapterFor(system, n)));
  const each = (fn) => Promise.all(parts.map(fn));
  const sum = (values) => values.reduce((s, n) => s + n, 0);
  return {
    parts,
    setup: () => each((a) => a.setup()),
    close: () => each((a) => a.close()),
    teardown: () => each((a) => a.teardown()),
    completed: async () => sum(await each((a) => a.completed())),
    async probe(seeded) {
      const probes = await each((a) => a.probe(seeded / parts.length));
      return { unfinished: async () => sum(await Promise.all(probes.map((p) => p.unfinished()))), close: () => Promise.all(probes.map((p) => p.close())) };
    },
  };
}

/**
 * Fills the queue with `count` no-op jobs through the system's own bulk API (not timed).
 * `keys`: spread over that many concurrency keys; `batched`: each 1,000 as one batch with a callback (errand);
 * `queue`: into that queue (errand; else its default).
 */
async function seed(adapter, count, keys, batched, queue) {
  for (let done = 0; done < count; done += 1000) {
    const batch = [];
    for (let i = done; i < Math.min(count, done + 1000); i++) batch.push({ i });
    await (batched ? adapter.enqueueBatch(batch) : adapter.enqueueMany(batch, keys, queue));
  }
}

/** Stores errand limits (key → { concurrency, rate_count, rate_period_ms }) in namespace `ns`. */
function errandLimits(limits) {
  return (ns) => withPg(async (c) => {
    for (const [key, l] of Object.entries(limits)) {
      await c.query(`INSERT INTO "${ns}".limits (key, concurrency, rate_count, rate_period_ms) VALUES ($1, $2, $3, $4)`,
        [key, l.concurrency ?? null, l.rate_count ?? null, l.rate_period_ms ?? null]);
    }
  });
}

/** Stores errand queue limits (queue → concurrency) in namespace `ns` (migration 017's table). */
function errandQueueLimits(limits) {
  return (ns) => withPg(async (c) => {
    for (const [queue, concurrency] of Object.entries(limits)) await c.query(`INSERT INTO "${ns}".queue_limits (queue, concurrency) VALUES ($1, $2)`, [queue, concurrency]);
  });
}

/** A peer's "best" worker settings with `extra` on top, as a json: mode (see knobsFor). */
async function peerMode(system, extra) {
  const { settings } = await import(`../systems/${system}.js`);
  return `json:${JSON.stringify({ ...settings.best, ...extra })}`;
}

/** BullMQ's global concurrency for queue "bench" under prefix `ns` (BullMQ 5.x+ open source). */
function bullmqGlobalConcurrency(n) {
  return async (ns) => {
    const { Queue } = await import("bullmq");
    const { default: IORedis } = await import("ioredis");
    const { redis } = await import("./common.js");
    const queue = new Queue("bench", { connection: new IORedis({ ...redis, maxRetriesPerRequest: null }), prefix: ns });
    await queue.setGlobalConcurrency(n);
    await queue.close();
  };
}

async function enqueue(role, system, ns, count, batch, callers) {
  const adapter = await adapterFor(system, ns);
  await adapter.setup();
  await adapter.close();
  const result = await spawnChild({ role, system, ns, count, batch, callers }).finish();
  const adapter2 = await adapterFor(system, ns);
  await adapter2.teardown();
  await adapter2.close();
  return { value: (result.count / result.ms) * 1000 };
}

/** Checks that every job a handler saw was recorded as completed, and none ran twice. */
async function verify(adapter, handled, seeded, label) {
  if (handled < 1) throw new Error(`${label}: no job was processed`);
  if (handled > seeded) throw new Error(`${label}: ${handled} handler calls for ${seeded} jobs (duplicates)`);
  const completed = await adapter.completed();
  if (completed < handled) {
    const error = new Error(`${label}: ${handled} handled but only ${completed} recorded as completed after shutdown`);
    error.lostCompletion = true; // fatal for errand (its promise); a finding for a peer
    throw error;
  }
  return completed;
}

/**
 * When the store shows the last completion: from the moment every seeded job was handled,
 * polls `probe` (the seeded jobs the store does not yet show as completed) every 2 ms until
 * it reads 0. `at`: the wall time that poll was sent (the last completion was committed
 * after the previous poll's snapshot and before this one's, a poll's time apart); the
 * polls made and the longest, in ms. Gives up once the count has not fallen for `stallMs`:
 * `at` is then the poll that saw it fall last, and `unfinished` what was left.
 */
async function lastCompletion(probe, stallMs = 10_000) {
  let polls = 0;
  let longestMs = 0;
  let least = Infinity;
  let fellAt;
  for (;;) {
    const sentAt = monoMs();
    const unfinished = await probe.unfinished();
    longestMs = Math.max(longestMs, monoMs() - sentAt);
    polls++;
    if (unfinished < least) {
      least = unfinished;
      fellAt = sentAt;
    }
    if (unfinished <= 0) return { at: sentAt, polls, longestMs, unfinished: 0 };
    if (monoMs() - fellAt > stallMs) return { at: fellAt, polls, longestMs, unfinished };
    await sleep(2);
  }
}

/**
 * The server's WAL so far (pg_stat_wal: records, full-page images, bytes), or null where
 * the view is missing (before PostgreSQL 14). Read before and after a run: what every
 * session wrote meanwhile, so on a quiet server the run's writes (issue 14: "fewer writes
 * per job"). A checkpoint during the run adds full-page images, counted apart.
 */
async function walSoFar() {
  try {
    return await withPg(async (c) => {
      const { rows } = await c.query("SELECT wal_records::float8 AS records, wal_fpi::float8 AS fpi, wal_bytes::float8 AS bytes FROM pg_stat_wal");
      return rows[0];
    });
  } catch {
    return null;
  }
}

/**
 * Fills a queue with `count` jobs, runs `workers` worker processes on it and returns the
 * rate. `keys`: spread the jobs over that many concurrency keys (errand); `batched`: enqueued
 * in batches of 1,000 with a callback (errand). `before(ns)` runs between setup and filling; `reuse`: the namespace exists (no
 * setup); `keep`: it is not dropped afterwards; `env`: extra environment for the worker processes; `checkpoint`: a
 * CHECKPOINT after `before`, so that the server is not still writing out what it wrote (a generated history) while the run is timed.
 * `warm`: each worker process first runs that many jobs in a namespace of its own (see warmUp in bench/child.js), set up here.
 * `queueEach` (errand): worker process i serves queue `q<i>` alone, which holds its share of the jobs: no claim is shared.
 * `schemaEach`: worker process i works in a namespace of its own (`<ns>_s<i>`), which holds its
 * share of the jobs: nothing is shared but the server and the machine.
 * `analyze`: the namespace's tables are analysed once filled (see analyzeSchema), for every
 * PostgreSQL system alike; false where a never-analysed table is what the scenario measures.
 */
export async function processJobs(system, ns, { count, capMs, mode, workers = 1, before, reuse = false, keep = false, keys, batched = false, env, checkpoint = false, warm, queueEach = false, schemaEach = false, analyze = true }) {
  if (system === "pgbench") return pgbenchJobs(ns, { count, clients: mode === "best" ? 4 : 1 });
  const nsOf = (index) => (schemaEach ? `${ns}_s${index}` : ns);
  const namespaces = schemaEach ? Array.from({ length: workers }, (_, index) => nsOf(index)) : [ns];
  const adapter = schemaEach ? await spread(system, namespaces) : await adapterFor(system, ns);
  if (!reuse) await adapter.setup();
  if (before) await before(ns);
  if (checkpoint) await withPg((c) => c.query("CHECKPOINT"));
  // Here, before any worker runs: graphile-worker's workers stop when another schema of the
  // database is migrated (its notice of a breaking migration names no schema).
  for (let index = 0; warm && index < workers; index++) {
    const warming = await adapterFor(system, warmNamespace(nsOf(index), index));
    await warming.setup();
    await warming.close();
  }
  const queueOf = (index) => (queueEach ? `q${index}` : undefined);
  const tasks = Array.from({ length: workers }, (_, index) => ({ role: "worker", system, ns: nsOf(index), mode, env, warm, index, queue: queueOf(index) }));
  let stopSampling = null;
  let probe;
  let walBefore;
  /** Fills the queue and starts measuring: before the workers start, or once they are warm (nothing of their warm-up counted). */
  const begin = async () => {
    if (queueEach) for (let index = 0; index < workers; index++) await seed(adapter, count / workers, keys, batched, queueOf(index));
    else if (schemaEach) for (const part of adapter.parts) await seed(part, count / workers, keys, batched);
    else await seed(adapter, count, keys, batched);
    await adapter.close();
    if (analyze && system !== "bullmq") for (const name of namespaces) await analyzeSchema(name);
    // PostgreSQL's CPU (every postgres process on this machine, none when the server is
    // elsewhere) per handled job, in µs, start-up and shutdown included: beside the workers'
    // own, where a run's CPU goes.
    // (BullMQ: none, nor WAL below; its store is Redis.)
    try {
      if (system !== "bullmq") stopSampling = samplePostgresCpu();
    } catch {
      // the server is on another machine: no figure
    }
    // Connected now and idle until the tail: the run itself carries no polling. One poll
    // when the tail begins (the last tenth of the jobs) walks the dead index entries the run
    // has left so far, so that the polls at the end, which time it, find few left to walk.
    probe = await adapter.probe(count);
    walBefore = system === "bullmq" ? null : await walSoFar();
  };
  if (!warm) await begin();
  let warming;
  let run;
  try {
    run = await runWorkers(tasks, count, capMs, {
      onWarm: warm ? begin : undefined,
      // Several workers: when the last is ready (see the window below), the jobs left then.
      onAllReady: workers > 1 ? async () => ({ at: monoMs(), unfinished: await probe.unfinished() }) : undefined,
      onTail: () => void (warming = probe.unfinished().catch(() => {})),
      settle: async () => {
        await warming;
        return lastCompletion(probe);
      },
    });
  } finally {
    await probe?.close();
  }
  const { results, reached, readyAt, allReady, settled } = run;
  const pgSeconds = stopSampling?.();
  const walAfter = walBefore && (await walSoFar());
  const handled = results.reduce((s, r) => s + r.count, 0);
  const first = Math.min(...results.map((r) => r.first ?? Infinity));
  const last = Math.max(...results.map((r) => r.last ?? -Infinity));
  // The window starts when the first worker is ready (its start-up done; its first fetch
  // may be under way) and ends when the store shows every job completed. Both ends count
  // what a big batch defers: the first fetch, which for a batch near the job count is most
  // of the work (a window from the first handler call leaves it out), and the completions
  // written after the last handler call. When the cap stopped the run first, it ends at the
  // last handler call. The JSON keeps the rate from the first call (fromFirstCallRate) and
  // to the last call (handlerRate) too.
  // With several workers the window starts when the last is ready, and counts the jobs
  // left then: the workers start together on 2 cores, and the first one ready would
  // otherwise run beside the start-up of the others (their Node, modules and connections,
  // 1–2 s of CPU for seven), which is not what many workers on one queue cost. The JSON
  // keeps the rate from the first one's ready too (fromFirstReadyRate).
  const handlerRate = handled > 1 ? ((handled - 1) / (last - first)) * 1000 : handled / (capMs / 1000);
  const end = settled?.at;
  const fromFirstReady = end == null || handled < 2 ? handlerRate : (handled / (end - readyAt)) * 1000;
  const value = end != null && allReady?.unfinished > 0 ? (allReady.unfinished / (end - allReady.at)) * 1000 : fromFirstReady;
  const tail = end == null ? {} : {
    ...(allReady ? { fromFirstReadyRate: fromFirstReady, lastReadyAfterFirstMs: allReady.at - readyAt, unfinishedWhenAllReady: allReady.unfinished } : {}),
    fromFirstCallRate: ((handled - 1) / (end - first)) * 1000, firstCallAfterReadyMs: first - readyAt,
    completionLagMs: end - last, tailPolls: settled.polls, tailLongestPollMs: settled.longestMs,
  };
  const label = `${system} ${mode}`;
  let completed;
  try {
    completed = await verify(adapter, handled, count, label);
    if (settled?.unfinished > 0) {
      const error = new Error(`${label}: ${settled.unfinished} of ${handled} handled jobs were not recorded as completed while the worker ran (only when it stopped)`);
      error.lostCompletion = true;
      throw error;
    }
  } catch (error) {
    error.rate = value; // the sweep keeps a peer's rate and notes its lost completions
    throw error;
  }
  if (!keep) await adapter.teardown();
  await adapter.close();
  // Node CPU per handled job, in µs: less sensitive to a loaded machine than the rate.
  const cpuUsPerJob = (results.reduce((s, r) => s + (r.cpuMs ?? 0), 0) * 1000) / Math.max(1, handled);
  const pgCpuUsPerJob = pgSeconds == null ? null : (pgSeconds * 1e6) / Math.max(1, handled);
  // WAL per handled job, start-up and shutdown included (as the PostgreSQL CPU).
  const wal = walAfter ? Object.fromEntries(["records", "fpi", "bytes"].map((k) => [k, (walAfter[k] - walBefore[k]) / Math.max(1, handled)])) : null;
  return { value, handlerRate, ...tail, handled, completed, reached, cpuUsPerJob, pgCpuUsPerJob, walBytesPerJob: wal?.bytes ?? null, walRecordsPerJob: wal?.records ?? null, walFpiPerJob: wal?.fpi ?? null, maxRssMB: Math.max(...results.map((r) => r.maxRssMB)), stopMs: Math.max(...results.map((r) => r.stopMs)) };
}

/** The raw-SQL ceiling by pgbench: the seed's table (bench/systems/raw.js), filled and analysed the same way. */
async function pgbenchJobs(ns, { count, clients }) {
  const adapter = await adapterFor("raw", ns);
  await adapter.setup();
  try {
    await seed(adapter, count);
    await analyzeSchema(ns);
    return await runPgbench(ns, { count, clients });
  } finally {
    await adapter.teardown();
    await adapter.close();
  }
}

/**
 * Pickup latency at `rate` jobs/s offered for `seconds`. `heldMs`: every {@link heldEvery}th
 * job is enqueued in a transaction committed that long after its insert (see
 * inHeldTransaction; the others go on meanwhile), and only those jobs are reported: a
 * web request that enqueues, then does its other work, beside a busy queue. Up to 50 jobs/s, one enqueue at a
 * time, each awaited; above, open loop: every job is sent when it is due, whether or not
 * earlier enqueues have returned, up to {@link maxInFlight} at once (beyond that a client's
 * pool times out waiting for a connection), so the load offered does not drop to what one
 * connection can commit. Above 50 jobs/s every system's producer gets {@link producerConnections}
 * connections: with the usual 10, each enqueue's commit waiting for its fsync held the load
 * offered to ~2,000 jobs/s. `committedPerSecond` says what the producer really reached.
 */
const maxInFlight = 64;
/** enqueue_concurrent's callers, each with a connection: a web server's requests, as latency_5k's producer. */
const concurrentCallers = 32;
const producerConnections = 32;
const heldEvery = 10;
/** How long latency_held's transactions stay open after their insert: a slow web request. */
const heldTransactionMs = 300;

async function latency(system, ns, { seconds, rate, heldMs = 0 }) {
  // notify: the raw-SQL system's table then notifies its listening worker (errand and the peers notify, or poll, on their own).
  const adapter = await adapterFor(system, ns, { notify: true, ...(rate > 50 ? { connections: producerConnections } : {}) });
  await adapter.setup();
  const [worker] = [spawnChild({ role: "worker", system, ns, mode: "latency" })];
  try {
    await worker.waitReady();
    await sleep(300);
    const interval = 1000 / rate;
    const total = Math.round(seconds * rate);
    const start = monoMs();
    let sent = 0;
    const called = [];
    const committed = [];
    const inFlight = new Set();
    const held = (seq) => heldMs > 0 && seq % heldEvery === heldEvery - 1;
    const send = (seq) => {
      called[seq] = monoMs();
      const sending = (held(seq) ? adapter.enqueueHeld({ seq }, heldMs) : adapter.enqueueOne({ seq })).then(() => {
        committed[seq] = monoMs();
        inFlight.delete(sending);
      });
      sending.catch(() => {}); // a failure stays in inFlight: the race or the final all reports it
      inFlight.add(sending);
      return sending;
    };
    while (sent < total) {
      if (rate <= 50 || sent === 0) { // the first one awaited: the adapter opens its client once
        const wait = start + sent * interval - monoMs();
        if (wait > 0) await sleep(wait);
        if (held(sent)) void send(sent++); // its commit comes heldMs later: the stream goes on
        else await send(sent++);
        continue;
      }
      const due = Math.min(total, Math.floor((monoMs() - start) / interval) + 1);
      while (sent < due && inFlight.size < maxInFlight) void send(sent++);
      await (inFlight.size >= maxInFlight ? Promise.race(inFlight) : sleep(1));
    }
    await Promise.all(inFlight);
    const deadline = performance.now() + 10_000;
    while (worker.count < sent && performance.now() < deadline) await sleep(5);
    const result = await worker.stop();
    await verify(adapter, result.count, sent, `${system} latency`);
    await adapter.teardown();
    await adapter.close();
    if (result.latencies.length < sent) {
      // Still behind 10 s after the last enqueue: the offered load outran the worker (a finding for a peer, a failure for errand).
      const error = new Error(`${system} latency: ${result.latencies.length} of ${sent} jobs picked up within 10 s of the last enqueue`);
      error.fellBehind = true;
      throw error;
    }
    // From commit (the enqueue call returned: the job exists) to the handler's start; a
    // worker woken before the producer saw its commit acknowledged counts as 0.
    const reported = result.latencies.filter(([seq]) => heldMs === 0 || held(seq));
    const fromCommit = reported.map(([seq, at]) => Math.max(0, at - committed[seq]));
    // End to end: from the enqueue call (includes the producer's commit and its fsync; a held transaction's hold).
    const fromCall = reported.map(([seq, at]) => at - called[seq]);
    return {
      value: percentile(fromCommit, 50), p99: percentile(fromCommit, 99),
      callP50: percentile(fromCall, 50), callP99: percentile(fromCall, 99),
      enqueueP50: percentile(committed.map((c, i) => c - called[i]), 50), samples: fromCommit.length,
      committedPerSecond: (sent / (Math.max(...committed) - start)) * 1000, // below `rate`: the producer could not offer the load
    };
  } catch (error) {
    worker.child.kill("SIGKILL");
    throw error;
  }
}

/**
 * A history as a busy installation whose table autovacuum never got to would have it:
 * `rows` jobs (kind "bench_history", one per second over the last `rows` seconds, capped
 * at 7 days back, as the pruner keeps) inserted ready and then finished as errand's worker
 * finishes them: 90 % done, moved to done_jobs (migration 018), 10 % dead, marked so in
 * jobs. Every finished row left a dead row version behind in jobs, with its entry in the
 * index of waiting jobs (jobs_open_plain). Autovacuum is off for both tables and nothing analyses them.
 * Last, one sequential read of jobs prunes its pages, and one walk through the index of
 * open jobs marks its entries for dead rows and raises the ready mark, as errand's own reads do while it works: a
 * table its worker left has nothing left to prune, and most of those entries marked (93 %
 * after 300,000 jobs; bench/README, rounds of 2026-12-03, morning and late morning). The
 * statements above leave both to the next reader, the timed run: at the table's fillfactor
 * of 45 a page is pruned only once its free space is under 55 %, where the UPDATE brings
 * it after reading it, and the first walk from the start fetches the row of every entry.
 * Returns the seconds the generation took.
 */
export async function history(ns, rows) {
  const started = performance.now();
  await withPg(async (c) => {
    await c.query(`ALTER TABLE "${ns}".jobs SET (autovacuum_enabled = false)`);
    await c.query(`ALTER TABLE "${ns}".done_jobs SET (autovacuum_enabled = false)`);
    await c.query(`
      INSERT INTO "${ns}".jobs (kind, payload, run_at, created_at)
      SELECT 'bench_history', jsonb_build_object('i', g), t, t
      FROM generate_series(1, $1::int) AS g, LATERAL (SELECT now() - least(interval '7 days', ($1::int - g) * interval '1 second') - interval '1 minute' AS t) AS at`, [rows]);
    await c.query(`
      WITH gone AS (DELETE FROM "${ns}".jobs WHERE kind = 'bench_history' AND id % 10 <> 0 RETURNING *)
      INSERT INTO "${ns}".done_jobs (id, kind, payload, status, priority, attempts, max_attempts, run_at, errors, created_at, started_at, finished_at, queue)
      SELECT id, kind, payload, 'done', priority, 1, max_attempts, run_at, errors, created_at, run_at, run_at + interval '10 milliseconds', queue FROM gone`);
    await c.query(`
      UPDATE "${ns}".jobs
      SET status = 'dead', attempts = 1, started_at = run_at, finished_at = run_at + interval '10 milliseconds', last_error = 'Error: boom'
      WHERE kind = 'bench_history'`);
    await c.query(`SELECT count(*) FROM "${ns}".jobs`);
    // One walk through the index of open jobs, as the claim floor's probe's first raise of
    // the ready mark reads it (migration 028): it fetches each entry's row and marks the
    // entries of dead rows, and leaves the mark at the first ready job, as the probes of the
    // worker that finished those jobs would have. A build from before the marks (an A/B
    // through BENCH_ERRAND_DIST): its probe's statement, which walks the index the same way.
    const marks = await c.query(`SELECT to_regproc('"${ns}".raise_ready_mark') IS NOT NULL AS marks`);
    if (marks.rows[0].marks) await c.query(`SELECT "${ns}".raise_ready_mark('default', 0)`);
    else await c.query(`SELECT id FROM "${ns}".jobs WHERE ${probeFilter} ORDER BY priority DESC, run_at, id LIMIT 1`);
  });
  return (performance.now() - started) / 1000;
}

/** errand's claimable jobs of the bench's queue and kind (claimableBy in src/sql/jobs.ts), as its probe asks for them. */
const probeFilter = "status = 'ready' AND outcome IS NULL AND queue = 'default' AND concurrency_key IS NULL AND run_at <= now() AND kind = ANY('{bench}'::text[])";

/** The history table of the last `history_raw` measurement, vacuumed and measured again by `history_vacuumed`. */
let historyKept;

/** Scenario definitions: which systems, how to measure, unit and direction. */
export function scenarios(cfg) {
  const peers = ["errand", "pgboss", "graphile", "bullmq", "raw"];
  const processing = [...peers, "pgbench"];
  return [
    { id: "enqueue_one", title: "enqueue one at a time", unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => enqueue("enqueue-one", s, ns, cfg.enqueueOne) },
    { id: "enqueue_concurrent", title: `enqueue one at a time from ${concurrentCallers} callers at once`, unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => enqueue("enqueue-one", s, ns, cfg.enqueueConcurrent, undefined, concurrentCallers) },
    { id: "enqueue_bulk", title: "bulk enqueue, 1,000 per call", unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => enqueue("enqueue-bulk", s, ns, cfg.enqueueBulk, 1000) },
    { id: "process_default", title: "process, default settings", unit: "jobs/s", higher: true, systems: processing,
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processDefault, capMs: cfg.capDefaultMs, mode: "default" }) },
    { id: "process_best", title: "process, best settings found", unit: "jobs/s", higher: true, systems: processing,
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processBest, capMs: cfg.capMs, mode: "best" }) },
    { id: "latency", latency: true, title: `pickup latency from commit at ${cfg.latencyRate} jobs/s, p50 (p99)`, unit: "ms", higher: false, systems: ["errand", "pgboss", "graphile", "bullmq", "raw"],
      measure: (s, ns) => latency(s, ns, { seconds: cfg.latencySeconds, rate: cfg.latencyRate }) },
    { id: "latency_5k", latency: true, title: `pickup latency from commit at ${cfg.latencyHighRate.toLocaleString("en")} jobs/s offered, p50 (p99)`, unit: "ms", higher: false, systems: ["errand", "pgboss", "graphile", "bullmq", "raw"],
      measure: (s, ns) => latency(s, ns, { seconds: cfg.latencyHighSeconds, rate: cfg.latencyHighRate }) },
    { id: "latency_held", latency: true, title: `pickup latency from commit of a job whose transaction committed ${heldTransactionMs} ms after its insert, at ${cfg.latencyRate} jobs/s, p50 (p99)`, unit: "ms", higher: false,
      systems: ["errand", "pgboss", "graphile"], // BullMQ's Redis has no transaction shared with PostgreSQL
      measure: (s, ns) => latency(s, ns, { seconds: cfg.latencySeconds, rate: cfg.latencyRate, heldMs: heldTransactionMs }) },
    { id: "two_workers", title: "2 worker processes, best settings", unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processBest, capMs: cfg.capMs, mode: "best", workers: 2 }) },
    // Against process_best (1 worker process): contention on the claim.
    { id: "eight_workers", title: "8 worker processes, best settings", unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processBest, capMs: cfg.capMs, mode: "best", workers: 8 }) },
    // The same two with every process warmed first (cfg.warmJobs each, see warmUp in
    // bench/child.js): a long-running worker's cost, which eight_workers's 12,500 jobs per
    // process do not reach. Issue 14's target is this pair.
    { id: "one_worker_warm", title: `1 worker process warmed by ${cfg.warmJobs.toLocaleString("en")} jobs, best settings`, unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processBest, capMs: cfg.capMs, mode: "best", warm: cfg.warmJobs }) },
    { id: "eight_workers_warm", title: `8 worker processes, each warmed by ${cfg.warmJobs.toLocaleString("en")} jobs, best settings`, unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processBest, capMs: cfg.capMs, mode: "best", workers: 8, warm: cfg.warmJobs }) },
    // errand: the same 8 processes, each on a queue of its own with an eighth of the jobs.
    // Against eight_workers_warm: what sharing one queue's claim costs, apart from 8
    // processes and their backends sharing the machine's cores.
    { id: "eight_queues_warm", title: `8 warmed worker processes, each on a queue of its own (no shared claim), best settings`, unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processBest, capMs: cfg.capMs, mode: "best", workers: 8, warm: cfg.warmJobs, queueEach: true }) },
    // errand: the same 8 processes, each in a schema of its own with an eighth of the jobs:
    // nothing shared but the server and the machine's 2 cores. Against one_worker_warm: what
    // 8 processes cost on this machine, before any table or claim is shared.
    { id: "eight_schemas_warm", title: `8 warmed worker processes, each in a schema of its own (nothing shared), best settings`, unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processBest, capMs: cfg.capMs, mode: "best", workers: 8, warm: cfg.warmJobs, schemaEach: true }) },
    { id: "idle_workers", title: `${cfg.idleWorkers} idle worker processes at rest: PostgreSQL CPU, % of one core`, unit: "%", higher: false, systems: ["errand"],
      measure: (s, ns) => idleCost(s, ns, { workers: cfg.idleWorkers, seconds: cfg.idleSeconds, warmSeconds: cfg.idleWarmSeconds }) },
    // The cost of long-running work's features per job, beside process_default (same count and settings).
    { id: "feat_result", group: "features", title: "process with a small JSON result per job (defaults)", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processDefault, capMs: cfg.capMs, mode: "result" }) },
    { id: "feat_progress", group: "features", title: "process with one ctx.progress per job (defaults)", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processDefault, capMs: cfg.capMs, mode: "progress" }) },
    { id: "feat_batch", group: "features", title: "process jobs enqueued in batches of 1,000 with a callback (defaults)", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processDefault, capMs: cfg.capMs, mode: "batch", batched: true }) },
    // Beyond one database: the JetStream transport with 1, 2 and 4 worker processes, beside
    // errand on PostgreSQL with 4 (process_best and two_workers are its 1 and 2).
    { id: "four_workers", group: "jetstream", title: "4 worker processes, best settings", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processBest, capMs: cfg.capMs, mode: "best", workers: 4 }) },
    ...[1, 2, 4].map((workers) => ({
      id: `jetstream_${workers}`, group: "jetstream", title: `JetStream transport, ${workers} worker process${workers > 1 ? "es" : ""} (concurrency 100 each)`, unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (_s, ns) => jetstreamJobs(ns, { count: cfg.processBest, capMs: cfg.capMs, workers }),
    })),
    // Limits (errand: concurrency keys, defaults; smallJobs each, so compare them with each other).
    { id: "keyed_limit", group: "limits", title: "per-key concurrency limit: 50 keys, at most 2 running each (defaults)", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.smallJobs, capMs: cfg.capMs, mode: "default", keys: 50, before: errandLimits({ "k*": { concurrency: 2 } }) }) },
    { id: "keyed_fair", group: "limits", title: "keys without limits: 50 keys round-robin (defaults)", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.smallJobs, capMs: cfg.capMs, mode: "default", keys: 50 }) },
    { id: "rate_limit", group: "limits", title: "rate limit 1,000/s on one key (defaults): the rate reached", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: Math.min(cfg.smallJobs, 5_000), capMs: cfg.capMs, mode: "default", keys: 1, before: errandLimits({ k0: { rate_count: 1000, rate_period_ms: 1000 } }) }) },
    // The outbox relay (errand only): smallJobs messages, one relay, default batch size.
    { id: "relay_nats", group: "relay", title: "outbox relay to JetStream, 100 keys", unit: "msg/s", higher: true, systems: ["errand"],
      measure: (s, ns) => relayThroughput(ns, { broker: "nats", count: cfg.smallJobs, keys: 100 }) },
    { id: "relay_nats_keyless", group: "relay", title: "outbox relay to JetStream, no key", unit: "msg/s", higher: true, systems: ["errand"],
      measure: (s, ns) => relayThroughput(ns, { broker: "nats", count: cfg.smallJobs, keys: 0 }) },
    { id: "relay_amqp", group: "relay", title: "outbox relay to RabbitMQ, 100 keys", unit: "msg/s", higher: true, systems: ["errand"],
      measure: (s, ns) => relayThroughput(ns, { broker: "amqp", count: cfg.smallJobs, keys: 100 }) },
    { id: "relay_amqp_keyless", group: "relay", title: "outbox relay to RabbitMQ, no key", unit: "msg/s", higher: true, systems: ["errand"],
      measure: (s, ns) => relayThroughput(ns, { broker: "amqp", count: cfg.smallJobs, keys: 0 }) },
    // Limits beside the peers that have them in their open-source versions (errand on its
    // defaults, as above; the peers on their best settings plus the feature):
    // pg-boss 12 `group: { id }` jobs + `work({ groupConcurrency: 2 })` (global per group);
    // BullMQ 6 `Worker({ limiter: { max, duration } })` (a queue's rate) and
    // `queue.setGlobalConcurrency(n)` (a queue's concurrency). BullMQ groups are Pro only.
    { id: "peer_keyed_limit", group: "limits", title: "per-key concurrency limit beside pg-boss groups: 50 keys, at most 2 running each", unit: "jobs/s", higher: true, systems: ["errand", "pgboss"],
      measure: async (s, ns) => s === "errand"
        ? processJobs(s, ns, { count: cfg.smallJobs, capMs: cfg.capMs, mode: "default", keys: 50, before: errandLimits({ "k*": { concurrency: 2 } }) })
        : processJobs(s, ns, { count: cfg.smallJobs, capMs: cfg.capMs, mode: await peerMode(s, { groupConcurrency: 2 }), keys: 50 }) },
    { id: "peer_rate_limit", group: "limits", title: "rate limit 1,000/s beside BullMQ's limiter: the rate reached", unit: "jobs/s", higher: true, systems: ["errand", "bullmq"],
      measure: async (s, ns) => s === "errand"
        ? processJobs(s, ns, { count: Math.min(cfg.smallJobs, 5_000), capMs: cfg.capMs, mode: "default", keys: 1, before: errandLimits({ k0: { rate_count: 1000, rate_period_ms: 1000 } }) })
        : processJobs(s, ns, { count: Math.min(cfg.smallJobs, 5_000), capMs: cfg.capMs, mode: await peerMode(s, { limiter: { max: 1000, duration: 1000 } }) }) },
    { id: "queue_limit", group: "limits", title: "a queue with a global concurrency limit of 10 (errand defaults; BullMQ setGlobalConcurrency)", unit: "jobs/s", higher: true, systems: ["errand", "bullmq"],
      measure: async (s, ns) => s === "errand"
        ? processJobs(s, ns, { count: cfg.smallJobs, capMs: cfg.capMs, mode: "default", before: errandQueueLimits({ default: 10 }) })
        : processJobs(s, ns, { count: cfg.smallJobs, capMs: cfg.capMs, mode: await peerMode(s, { concurrency: 10 }), before: bullmqGlobalConcurrency(10) }) },
    { id: "no_limits", group: "limits", title: "no limits on this queue while another queue and a key have limits (defaults): compare with process_default", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processDefault, capMs: cfg.capMs, mode: "default", before: async (n) => {
        await errandQueueLimits({ other: 5 })(n);
        await errandLimits({ "tenant:*": { concurrency: 2 } })(n);
      } }) },
    // errand only. In each run: an empty table; then a table with the history, never
    // vacuumed or analysed; then the same table after VACUUM ANALYZE.
    { id: "history_empty", group: "history", title: "history: process, empty table (defaults)", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.historyJobs, capMs: cfg.capMs, mode: "default", checkpoint: true, analyze: false }) },
    { id: "history_raw", group: "history", title: `history: ${cfg.historyRows.toLocaleString("en")} done/dead rows, never vacuumed or analysed`, unit: "jobs/s", higher: true, systems: ["errand"],
      measure: async (s, ns) => {
        let seconds;
        const result = await processJobs(s, ns, { count: cfg.historyJobs, capMs: cfg.capMs, mode: "default", keep: cfg.keepHistory, checkpoint: true, analyze: false, before: async (n) => void (seconds = await history(n, cfg.historyRows)) });
        if (cfg.keepHistory) historyKept = ns;
        return { ...result, generateSeconds: seconds };
      } },
    { id: "history_vacuumed", group: "history", title: `history: ${cfg.historyRows.toLocaleString("en")} done/dead rows, after VACUUM ANALYZE`, unit: "jobs/s", higher: true, systems: ["errand"],
      measure: async (s) => {
        if (!historyKept) throw new Error("history_vacuumed runs on history_raw's table, which is missing");
        const ns = historyKept;
        historyKept = undefined;
        try {
          return await processJobs(s, ns, { count: cfg.historyJobs, capMs: cfg.capMs, mode: "default", reuse: true, checkpoint: true, analyze: false, before: async (n) => {
            await withPg(async (c) => {
              await c.query(`UPDATE "${n}".done_jobs SET kind = 'bench_history' WHERE kind = 'bench'`); // the last run's jobs are history now
              await c.query(`VACUUM ANALYZE "${n}".jobs`);
              await c.query(`VACUUM ANALYZE "${n}".done_jobs`);
            });
          } });
        } finally {
          await dropSchema(ns).catch(() => {});
        }
      } },
    // The purger deleting a week of history past the retention (a tenth of historyRows) while the worker runs, beside the same run without it.
    { id: "history_purge", group: "history", title: `history: process while the purger deletes ${Math.max(10_000, cfg.historyRows / 10).toLocaleString("en")} rows past retention (value), against without`, unit: "jobs/s", higher: true, systems: ["errand"],
      measure: async (s, ns) => (await import("./purge.js")).purgeUnderLoad(s, ns, { rows: Math.max(10_000, cfg.historyRows / 10), count: cfg.historyJobs, capMs: cfg.capMs }) },
  ];
}

/**
 * The database's cost of idle workers at rest: `workers` worker processes (defaults) on an
 * empty queue for `seconds`, after `warmSeconds` in which each has run its periodic
 * statements (presence every 15 s; rescue, pauses and the resting poll every 30 s) once on
 * its listening connection, where their first run parses and plans them; against the same
 * time with none. value: the extra CPU of all postgres processes, in % of one core (on a
 * shared machine, others' load lands here too); also the CPU of the workers' own backends
 * alone (named by application_name), and of all postgres in the first `seconds` of the warm-up. An idle
 * worker holds its listening connection only (its pool's close after their idle timeout;
 * the pool is capped at one), but starts with two: the workers start in waves that fit
 * the free connections, each wave once the last is down to one connection per worker.
 */
async function idleCost(system, ns, { workers, seconds, warmSeconds }) {
  const free = await withPg(async (c) => (await c.query(
    "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int - count(*)::int AS free FROM pg_stat_activity")).rows[0].free);
  const headroom = free - workers - 2; // connections left for the start-up's second one
  if (headroom < 1) throw new Error(`${system} idle: ${workers} workers need ${workers + 1} connections and PostgreSQL has ${free} free; raise max_connections or lower idleWorkers`);
  const adapter = await adapterFor(system, ns);
  await adapter.setup();
  await adapter.close();
  const base0 = postgresCpu();
  await sleep(seconds * 1000);
  const baseline = cpuBetween(base0, postgresCpu());
  const name = `bench_idle_${process.pid}`;
  const env = { BENCH_ERRAND_URL: `${pgUrl}${pgUrl.includes("?") ? "&" : "?"}application_name=${name}`, BENCH_ERRAND_POOL_SIZE: "1" };
  const handles = [];
  try {
    while (handles.length < workers) {
      const wave = [];
      for (let i = Math.min(headroom, workers - handles.length); i > 0; i--) wave.push(spawnChild({ role: "worker", system, ns, mode: "default", env }));
      handles.push(...wave);
      await Promise.all(wave.map((h) => h.waitReady(120_000)));
      // Start-up's statements are not the idle cost, and its connections must close before the next wave.
      const deadline = Date.now() + 60_000;
      while ((await backendsOf(name)).size > handles.length) {
        if (Date.now() > deadline) throw new Error(`${system} idle: ${handles.length} idle workers still hold ${(await backendsOf(name)).size} connections after 60 s`);
        await sleep(500);
      }
    }
    const pids = await backendsOf(name);
    const first0 = postgresCpu();
    await sleep(Math.min(seconds, warmSeconds) * 1000);
    const first1 = postgresCpu();
    await sleep(Math.max(0, warmSeconds - seconds) * 1000);
    const idle0 = postgresCpu();
    await sleep(seconds * 1000);
    const idle1 = postgresCpu();
    const results = await Promise.all(handles.map((h) => h.stop()));
    if (results.some((r) => r.count > 0)) throw new Error(`${system} idle: a worker ran a job on an empty queue`);
    const pct = (cpuSeconds) => (cpuSeconds / seconds) * 100;
    const firstPct = warmSeconds > 0 ? (cpuBetween(first0, first1) / Math.min(seconds, warmSeconds) - baseline / seconds) * 100 : undefined;
    return { value: pct(cpuBetween(idle0, idle1) - baseline), backendsPct: pct(cpuBetween(idle0, idle1, pids)), baselinePct: pct(baseline), backends: pids.size, firstPct };
  } catch (error) {
    for (const h of handles) h.child.kill("SIGKILL");
    throw error;
  } finally {
    await dropSchema(ns).catch(() => {});
  }
}
