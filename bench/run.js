#!/usr/bin/env node
// errand vs pg-boss, graphile-worker and BullMQ, side by side on this machine's PostgreSQL
// and Redis. Scenario by scenario, systems interleaved (order rotated each run), medians
// of --runs runs. Prints a markdown table and writes bench/results/<time>.{json,md}.
//
//   node bench/run.js [--smoke] [--runs N] [--only id,id] [--systems errand,raw] [--idle-workers N] [--latency-rate N]
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { dropSchema, pgUrl, redis, withPg } from "./lib/common.js";
import { summarise, systems, table, targets } from "./lib/report.js";
import { scenarios } from "./lib/scenarios.js";
import { describeKnobs, readPeerSettings } from "./lib/peer-settings.js";

const { values: args } = parseArgs({
  options: {
    smoke: { type: "boolean", default: false },
    runs: { type: "string" },
    only: { type: "string" },
    systems: { type: "string" },
    "history-rows": { type: "string" },
    "history-jobs": { type: "string" },
    "idle-workers": { type: "string" },
    "latency-rate": { type: "string" },
  },
});

// processDefault / processBest: 100,000 jobs, as issue 14 measured (with 20,000 a run on this
// machine lasted under half a second, mostly ramp-up). smallJobs: the limits and relay
// scenarios, whose rates are a tenth of plain processing's.
const cfg = args.smoke
  ? { runs: 1, enqueueOne: 50, enqueueConcurrent: 500, enqueueBulk: 3_000, processDefault: 1_000, processBest: 2_000, smallJobs: 1_000, capDefaultMs: 1_500, capMs: 10_000,
      latencySeconds: 1, latencyRate: 50, latencyHighSeconds: 0.5, latencyHighRate: 5_000, idleWorkers: 5, idleSeconds: 2, idleWarmSeconds: 0, historyRows: 10_000, historyJobs: 1_000, warmJobs: 500 }
  : { runs: 3, enqueueOne: 1_000, enqueueConcurrent: 20_000, enqueueBulk: 50_000, processDefault: 100_000, processBest: 100_000, smallJobs: 20_000, capDefaultMs: 8_000, capMs: 30_000,
      latencySeconds: 8, latencyRate: 50, latencyHighSeconds: 4, latencyHighRate: 5_000, idleWorkers: 50, idleSeconds: 30, idleWarmSeconds: 35, historyRows: 10_000_000, historyJobs: 100_000, warmJobs: 25_000 };
if (args.runs) cfg.runs = Number(args.runs);
if (args["history-rows"]) cfg.historyRows = Number(args["history-rows"]); // e.g. 2000000: a quicker history scenario
if (args["history-jobs"]) cfg.historyJobs = Number(args["history-jobs"]); // e.g. 400000: a longer run of each history scenario
if (args["idle-workers"]) cfg.idleWorkers = Number(args["idle-workers"]); // idle_workers: 50 unless --smoke
if (args["latency-rate"]) cfg.latencyHighRate = Number(args["latency-rate"]); // latency_5k at another load offered, e.g. 1500: one every producer commits

const only = args.only?.split(",");
const onlySystems = args.systems?.split(",");
// history_raw's table (10 M rows, gigabytes) is kept for history_vacuumed only when that runs.
cfg.keepHistory = !only || only.includes("history") || only.includes("history_vacuumed");
const defs = scenarios(cfg).filter((d) => !only || only.includes(d.id) || only.includes(d.group));

const raw = {};
const failures = [];
const findings = [];
const log = (...parts) => console.error(...parts);

async function measureOnce(def, system, run) {
  const ns = `bench_${system}_${def.id}_${run}`.toLowerCase();
  const started = performance.now();
  try {
    let timer;
    const limitMs = args.smoke ? 120_000 : 900_000; // a hung measurement (e.g. a service down) fails instead of hanging CI
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no result after ${limitMs / 1000} s`)), limitMs);
    });
    const result = await Promise.race([def.measure(system, ns), timeout]).finally(() => clearTimeout(timer));
    const extra = (result.p99 != null ? ` p99 ${result.p99.toFixed(1)}` : "") +
      (result.handlerRate != null ? ` (to the last handler call ${result.handlerRate.toFixed(1)}${result.completionLagMs != null ? `; last completion ${result.completionLagMs.toFixed(1)} ms after it` : ""})` : "") +
      (result.fromFirstCallRate != null ? ` (from the first handler call ${result.fromFirstCallRate.toFixed(1)}, ${result.firstCallAfterReadyMs.toFixed(0)} ms after the worker's ready)` : "") +
      (result.fromFirstReadyRate != null ? ` (from the first worker's ready ${result.fromFirstReadyRate.toFixed(1)}; the last was ready ${result.lastReadyAfterFirstMs.toFixed(0)} ms after it, with ${result.unfinishedWhenAllReady} jobs left)` : "");
    const rss = (result.maxRssMB != null ? ` rss ${result.maxRssMB.toFixed(0)} MB` : "") +
      (result.cpuUsPerJob != null ? `, ${result.cpuUsPerJob.toFixed(1)} µs CPU/job` : "") +
      (result.pgCpuUsPerJob != null ? `, PostgreSQL ${result.pgCpuUsPerJob.toFixed(1)} µs/job` : "") +
      (result.walBytesPerJob != null ? `, WAL ${result.walBytesPerJob.toFixed(0)} B/job (${result.walRecordsPerJob.toFixed(1)} records, ${result.walFpiPerJob.toFixed(2)} full pages)` : "") +
      (result.generateSeconds != null ? `, history generated in ${result.generateSeconds.toFixed(0)} s` : "") +
      (result.committedPerSecond != null ? `, ${result.committedPerSecond.toFixed(0)} enqueues/s committed` : "") +
      (result.backendsPct != null ? `, the workers' ${result.backends} backends ${result.backendsPct.toFixed(2)} %, all postgres with no workers ${result.baselinePct.toFixed(2)} %` : "") +
      (result.firstPct != null ? `; in the first ${cfg.idleSeconds} s after start-up ${result.firstPct.toFixed(2)} %` : "");
    log(`  ${def.id} run ${run} ${systems[system].padEnd(15)} ${result.value.toFixed(1).padStart(10)} ${def.unit}${extra}${rss} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    return result;
  } catch (error) {
    log(`  ${def.id} run ${run} ${systems[system]} FAILED: ${error.stack ?? error}`);
    // A peer losing a completion, or falling behind the offered load, is something the bench
    // found about that peer, not a broken bench: report it, but only errand's own (or any crash) fail the run.
    // A missing pgbench is a gap in the table, reported, not a failure of the bench.
    (((error.lostCompletion || error.fellBehind) && system !== "errand") || error.missingTool ? findings : failures).push(`${def.id}/${system}: ${error.message ?? error}`);
    await dropSchema(ns).catch(() => {});
    return { error: String(error.message ?? error) };
  }
}

async function main() {
  await withPg((c) => c.query("SELECT 1")).catch((error) => {
    throw new Error(`PostgreSQL is not reachable at ${pgUrl} (${error.message}); see bench/README.md`);
  });
  const settings = await withPg(async (c) => (await c.query(
    `SELECT name, setting FROM pg_settings WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'shared_buffers', 'max_connections')`)).rows);
  log(`bench: ${args.smoke ? "smoke" : "full"}, ${cfg.runs} run(s), ${cpus().length} cores, PostgreSQL ${pgUrl}, Redis ${redis.host}:${redis.port}`);

  const groups = [];
  for (const def of defs) {
    const key = def.group ?? def.id;
    let group = groups.find((g) => g.key === key);
    if (!group) groups.push((group = { key, defs: [] }));
    group.defs.push(def);
  }
  for (const group of groups) {
    log(`\n${group.key}`);
    for (let run = 1; run <= cfg.runs; run++) {
      for (const def of group.defs) {
        const list = def.systems.filter((s) => !onlySystems || onlySystems.includes(s));
        const order = list.map((_, i) => list[(i + run - 1) % list.length]); // rotate: nobody always goes first
        for (const system of order) {
          ((raw[def.id] ??= {})[system] ??= []).push(await measureOnce(def, system, run));
        }
      }
    }
  }

  const summary = summarise(raw);
  const markdown = table(summary, defs);
  const checks = targets(summary, cfg);
  const targetLines = checks.map((c) => `- ${c.met ? "MET" : "NOT MET"}: ${c.target} — ${c.detail}`).join("\n");
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const used = await settingsUsed();
  const md = `# errand bench, ${args.smoke ? "smoke" : "full"} (${stamp})\n\nMedians of ${cfg.runs} run(s), ${cpus().length} cores. ` +
    `× columns: errand's advantage (> 1 = errand better).\n\n${markdown}\n\nBest settings used:\n${used}\n\n## Targets\n\n${targetLines}\n`;
  const dir = new URL("./results/", import.meta.url);
  mkdirSync(dir, { recursive: true });
  const json = JSON.stringify({ mode: args.smoke ? "smoke" : "full", at: stamp, config: cfg, cores: cpus().length, postgres: settings, summary, targets: checks, failures, findings }, null, 2);
  for (const name of [stamp, args.smoke ? "latest-smoke" : "latest"]) {
    writeFileSync(new URL(`${name}.json`, dir), json);
    writeFileSync(new URL(`${name}.md`, dir), md);
  }
  console.log(md);
  if (findings.length) console.log(`\nFindings about peers (not failures of the bench):\n${findings.map((f) => `  ${f}`).join("\n")}`);
  if (failures.length) {
    console.error(`\n${failures.length} measurement(s) failed:\n${failures.map((f) => `  ${f}`).join("\n")}`);
    process.exit(1);
  }
}

/** The "best" rows' settings, each peer's from its sweep (bench/peer-settings.json) when there is one. */
async function settingsUsed() {
  const swept = readPeerSettings().peers ?? {};
  const lines = [];
  for (const system of ["errand", "pgboss", "graphile", "bullmq"]) {
    const { settings } = await import(`./systems/${system}.js`);
    const sweep = swept[system];
    const source = system === "errand" ? "" : sweep ? ` (swept ${sweep.measuredAt.slice(0, 10)} on ${sweep.package} ${sweep.version}, bench/peer-settings.json)` : " (not swept: the adapter's fallback)";
    lines.push(`- ${systems[system]}: ${describeKnobs(settings.best)}${source}`);
  }
  lines.push("- raw SQL: 4 loops, 100 rows per statement (defaults: 1 loop); pgbench: the seed's claim of 100 + complete, 4 clients (defaults row: 1 client)");
  return lines.join("\n");
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
