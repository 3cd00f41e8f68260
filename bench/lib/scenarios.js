// The scenarios. Each `measure(system, ns, cfg)` sets up a fresh namespace for `system`,
// measures once and returns { value, ...details }; run.js interleaves systems and runs.
import { percentile, sleep, wallMs, withPg } from "./common.js";
import { runWorkers, spawnChild } from "./children.js";

async function adapterFor(system, ns) {
  return (await import(`../systems/${system}.js`)).create(ns);
}

/** Fills the queue with `count` no-op jobs through the system's own bulk API (not timed). */
async function seed(adapter, count, keys) {
  for (let done = 0; done < count; done += 1000) {
    const batch = [];
    for (let i = done; i < Math.min(count, done + 1000); i++) batch.push({ i });
    await adapter.enqueueMany(batch, keys);
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

async function enqueue(role, system, ns, count, batch) {
  const adapter = await adapterFor(system, ns);
  await adapter.setup();
  await adapter.close();
  const result = await spawnChild({ role, system, ns, count, batch }).finish();
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

export async function processJobs(system, ns, { count, capMs, mode, workers = 1, before, keys }) {
  const adapter = await adapterFor(system, ns);
  await adapter.setup();
  if (before) await before(ns);
  await seed(adapter, count, keys);
  await adapter.close();
  const tasks = Array.from({ length: workers }, () => ({ role: "worker", system, ns, mode }));
  const { results, reached } = await runWorkers(tasks, count, capMs);
  const handled = results.reduce((s, r) => s + r.count, 0);
  const first = Math.min(...results.map((r) => r.first ?? Infinity));
  const last = Math.max(...results.map((r) => r.last ?? -Infinity));
  const completed = await verify(adapter, handled, count, `${system} ${mode}`);
  await adapter.teardown();
  await adapter.close();
  // Rate between the first and the last handler call, so start-up cost is not counted.
  const value = handled > 1 ? ((handled - 1) / (last - first)) * 1000 : handled / (capMs / 1000);
  return { value, handled, completed, reached, maxRssMB: Math.max(...results.map((r) => r.maxRssMB)), stopMs: Math.max(...results.map((r) => r.stopMs)) };
}

async function latency(system, ns, { seconds, rate }) {
  const adapter = await adapterFor(system, ns);
  await adapter.setup();
  const [worker] = [spawnChild({ role: "worker", system, ns, mode: "latency" })];
  try {
    await worker.waitReady();
    await sleep(300);
    const interval = 1000 / rate;
    const start = wallMs();
    let sent = 0;
    const called = [];
    const committed = [];
    while (sent < seconds * rate) {
      const due = start + sent * interval;
      const wait = due - wallMs();
      if (wait > 0) await sleep(wait);
      called[sent] = wallMs();
      await adapter.enqueueOne({ seq: sent });
      committed[sent] = wallMs();
      sent++;
    }
    const deadline = performance.now() + 10_000;
    while (worker.count < sent && performance.now() < deadline) await sleep(5);
    const result = await worker.stop();
    await verify(adapter, result.count, sent, `${system} latency`);
    await adapter.teardown();
    await adapter.close();
    if (result.latencies.length < sent) throw new Error(`${system} latency: ${result.latencies.length} of ${sent} jobs picked up`);
    // From commit (the enqueue call returned: the job exists) to the handler's start; a
    // worker woken before the producer saw its commit acknowledged counts as 0.
    const fromCommit = result.latencies.map(([seq, at]) => Math.max(0, at - committed[seq]));
    // End to end: from the enqueue call (includes the producer's commit and its fsync).
    const fromCall = result.latencies.map(([seq, at]) => at - called[seq]);
    return {
      value: percentile(fromCommit, 50), p99: percentile(fromCommit, 99),
      callP50: percentile(fromCall, 50), callP99: percentile(fromCall, 99),
      enqueueP50: percentile(committed.map((c, i) => c - called[i]), 50), samples: fromCommit.length,
    };
  } catch (error) {
    worker.child.kill("SIGKILL");
    throw error;
  }
}

/** Adds `rows` finished jobs (90 % done, 10 % dead) to errand's table and vacuums it, as an old table would be. */
async function history(ns, rows) {
  await withPg(async (c) => {
    await c.query(`
      INSERT INTO "${ns}".jobs (kind, payload, status, attempts, run_at, started_at, finished_at, last_error)
      SELECT 'bench', jsonb_build_object('i', g), CASE WHEN g % 10 = 0 THEN 'dead' ELSE 'done' END, 1,
             now() - interval '1 day', now() - interval '1 day', now() - interval '1 day',
             CASE WHEN g % 10 = 0 THEN 'Error: boom' END
      FROM generate_series(1, $1::int) AS g`, [rows]);
    await c.query(`VACUUM ANALYZE "${ns}".jobs`);
  });
}

/** Scenario definitions: which systems, how to measure, unit and direction. */
export function scenarios(cfg) {
  const peers = ["errand", "pgboss", "graphile", "bullmq", "raw"];
  return [
    { id: "enqueue_one", title: "enqueue one at a time", unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => enqueue("enqueue-one", s, ns, cfg.enqueueOne) },
    { id: "enqueue_bulk", title: "bulk enqueue, 1,000 per call", unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => enqueue("enqueue-bulk", s, ns, cfg.enqueueBulk, 1000) },
    { id: "process_default", title: "process, default settings", unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processDefault, capMs: cfg.capDefaultMs, mode: "default" }) },
    { id: "process_best", title: "process, best settings found", unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processBest, capMs: cfg.capMs, mode: "best" }) },
    { id: "latency", title: `pickup latency from commit at ${cfg.latencyRate} jobs/s, p50 (p99)`, unit: "ms", higher: false, systems: ["errand", "pgboss", "graphile", "bullmq"],
      measure: (s, ns) => latency(s, ns, { seconds: cfg.latencySeconds, rate: cfg.latencyRate }) },
    { id: "two_workers", title: "2 worker processes, best settings", unit: "jobs/s", higher: true, systems: peers,
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processBest, capMs: cfg.capMs, mode: "best", workers: 2 }) },
    // Limits (errand: concurrency keys; the cost beside process_default, same count and settings).
    { id: "keyed_limit", group: "limits", title: "per-key concurrency limit: 50 keys, at most 2 running each (defaults)", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processDefault, capMs: cfg.capMs, mode: "default", keys: 50, before: errandLimits({ "k*": { concurrency: 2 } }) }) },
    { id: "keyed_fair", group: "limits", title: "keys without limits: 50 keys round-robin (defaults)", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.processDefault, capMs: cfg.capMs, mode: "default", keys: 50 }) },
    { id: "rate_limit", group: "limits", title: "rate limit 1,000/s on one key (defaults): the rate reached", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: Math.min(cfg.processDefault, 5_000), capMs: cfg.capMs, mode: "default", keys: 1, before: errandLimits({ k0: { rate_count: 1000, rate_period_ms: 1000 } }) }) },
    { id: "history_empty", group: "history", title: "history: claim, empty table (defaults)", unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.historyJobs, capMs: cfg.capMs, mode: "default" }) },
    { id: "history_full", group: "history", title: `history: claim with ${cfg.historyRows.toLocaleString("en")} done/dead rows (defaults)`, unit: "jobs/s", higher: true, systems: ["errand"],
      measure: (s, ns) => processJobs(s, ns, { count: cfg.historyJobs, capMs: cfg.capMs, mode: "default", before: (n) => history(n, cfg.historyRows) }) },
  ];
}
