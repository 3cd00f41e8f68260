#!/usr/bin/env node
// Finds each peer's best worker settings, so that the bench compares errand with the peers
// at their best, not at settings someone guessed. For each peer, a coarse grid of its main
// knobs (the `sweep` export of bench/systems/<peer>.js), one short run per point; then the
// leaders and the neighbours of the best (midpoints of its numeric knobs) again, in
// interleaved rounds; the winner is the highest median. Writes bench/peer-settings.json
// (date, versions, machine, the whole table), which `npm run bench` uses for "best".
//
//   npm run bench:sweep                       # every peer, ~10–15 min on 2 cores
//   node bench/sweep.js --peers graphile --jobs 20000 --rounds 3 --top 3 --note "quiet machine"
//   node bench/sweep.js --peers graphile --jobs 100000 --points '[{"concurrency":50,"localQueueSize":2000,"completeJobBatchDelay":10}]'
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { dropSchema, median } from "./lib/common.js";
import { describeKnobs, peerSettingsUrl, readPeerSettings } from "./lib/peer-settings.js";
import { processJobs } from "./lib/scenarios.js";
import { systems } from "./lib/report.js";

const { values: args } = parseArgs({
  options: {
    peers: { type: "string", default: "graphile,pgboss,bullmq" },
    jobs: { type: "string", default: "20000" },
    rounds: { type: "string", default: "3" },
    top: { type: "string", default: "3" },
    note: { type: "string", default: "" },
    // JSON array of settings to start from instead of the grid (e.g. the last sweep's leaders, at another --jobs)
    points: { type: "string" },
    "dry-run": { type: "boolean", default: false },
  },
});
const jobs = Number(args.jobs);
const packages = { graphile: "graphile-worker", pgboss: "pg-boss", bullmq: "bullmq" };
const log = (...parts) => console.error(...parts);
const findings = [];

/** Every combination of the axes' values. */
function grid(axes) {
  return Object.entries(axes).reduce((points, [key, values]) => points.flatMap((p) => values.map((v) => ({ ...p, [key]: v }))), [{}]);
}

/**
 * The best point's neighbours: for each numeric knob, the midpoints towards the adjacent grid
 * values, and twice the value when the best sits on the grid's top edge (the peer may do
 * better still past it).
 */
function neighbours(best, axes) {
  const out = [];
  for (const [key, values] of Object.entries(axes)) {
    const sorted = values.filter((v) => typeof v === "number" && v > 0).sort((a, b) => a - b);
    const i = sorted.indexOf(best[key]);
    if (i < 0) continue;
    if (i === sorted.length - 1 && sorted.length > 1) out.push({ ...best, [key]: best[key] * 2 });
    for (const other of [sorted[i - 1], sorted[i + 1]]) {
      if (other === undefined) continue;
      const mid = Math.round((best[key] + other) / 2);
      if (mid !== best[key] && mid !== other) out.push({ ...best, [key]: mid });
    }
  }
  return out;
}

async function measure(peer, knobs, tag) {
  const ns = `sweep_${peer}_${tag}`;
  try {
    const r = await processJobs(peer, ns, { count: jobs, capMs: 30_000, mode: `json:${JSON.stringify(knobs)}` });
    if (!Number.isFinite(r.value)) throw new Error("no rate: one handler call only, and the cap stopped the run");
    // value: to the last completion recorded (see processJobs), the measure the peers are ranked by.
    const toLastCall = Number.isFinite(r.handlerRate) ? `, ${Math.round(r.handlerRate).toLocaleString("en")} to the last handler call` : "";
    log(`  ${peer} ${describeKnobs(knobs).padEnd(70)} ${Math.round(r.value).toLocaleString("en").padStart(7)} jobs/s${r.reached ? toLastCall : " (cap reached)"}`);
    return r.value;
  } catch (error) {
    log(`  ${peer} ${describeKnobs(knobs)} FAILED: ${error.message}`);
    await dropSchema(ns).catch(() => {});
    if (error.lostCompletion && Number.isFinite(error.rate)) {
      // Handled every job but lost a few completions at shutdown: a finding about the
      // peer (printed, and kept in the file), not a reason to drop its rate.
      findings.push(`${peer} ${describeKnobs(knobs)}: ${error.message}`);
      return error.rate;
    }
    return null;
  }
}

async function sweepPeer(peer) {
  const { sweep: axes } = await import(`./systems/${peer}.js`);
  const key = (k) => JSON.stringify(k);
  const points = new Map(); // key → { knobs, values: [] }
  const add = (knobs) => points.get(key(knobs)) ?? points.set(key(knobs), { knobs, values: [] }).get(key(knobs));
  const startedAt = new Date();
  const load = [loadavg()[0]];

  const coarse = args.points ? JSON.parse(args.points) : grid(axes);
  log(`\n${systems[peer]}: ${args.points ? "given points" : "coarse grid"}, ${coarse.length} points × 1 run of ${jobs.toLocaleString("en")} jobs`);
  let i = 0;
  for (const knobs of coarse) add(knobs).values.push(await measure(peer, knobs, i++));
  const ranked = () => [...points.values()].filter((p) => median(p.values) != null).sort((a, b) => median(b.values) - median(a.values));

  const leaders = ranked().slice(0, Number(args.top));
  const refine = [...leaders.map((p) => p.knobs), ...(leaders[0] ? neighbours(leaders[0].knobs, axes) : [])];
  log(`${systems[peer]}: refine, ${refine.length} points × ${args.rounds} interleaved rounds`);
  for (let round = 0; round < Number(args.rounds); round++) {
    load.push(loadavg()[0]);
    for (let j = 0; j < refine.length; j++) {
      const knobs = refine[(j + round) % refine.length];
      add(knobs).values.push(await measure(peer, knobs, i++));
    }
  }
  // The winner must have been measured in the refine rounds (a single coarse run can be lucky).
  const refined = new Set(refine.map(key));
  const table = () => ranked().map((p) => ({ settings: p.knobs, median: Math.round(median(p.values)), runs: p.values.map((v) => (v == null ? null : Math.round(v))) }));
  let winner = table().find((row) => refined.has(key(row.settings)));
  // A winner on or past a knob's top edge may do better further out: climb, doubling that
  // knob against the winner in interleaved rounds, until the doubled point loses (at most 4 steps).
  for (let step = 0; step < 4; step++) {
    const beyond = Object.entries(axes)
      .filter(([k, values]) => typeof winner.settings[k] === "number" && winner.settings[k] > 0 && winner.settings[k] >= Math.max(...values.filter((v) => typeof v === "number")))
      .map(([k]) => ({ ...winner.settings, [k]: winner.settings[k] * 2 }))
      .filter((knobs) => !refined.has(key(knobs)));
    if (beyond.length === 0) break;
    const contest = [winner.settings, ...beyond];
    log(`${systems[peer]}: climb past the edge, ${contest.length} points × ${args.rounds} interleaved rounds`);
    for (const knobs of beyond) refined.add(key(knobs));
    for (let round = 0; round < Number(args.rounds); round++) {
      load.push(loadavg()[0]);
      for (let j = 0; j < contest.length; j++) {
        const knobs = contest[(j + round) % contest.length];
        add(knobs).values.push(await measure(peer, knobs, i++));
      }
    }
    const next = table().find((row) => refined.has(key(row.settings)));
    if (key(next.settings) === key(winner.settings)) break;
    winner = next;
  }
  load.push(loadavg()[0]);
  const version = JSON.parse(readFileSync(new URL(`./node_modules/${packages[peer]}/package.json`, import.meta.url), "utf8")).version;
  return {
    package: packages[peer],
    version,
    measuredAt: startedAt.toISOString(),
    minutes: Number(((Date.now() - startedAt.getTime()) / 60_000).toFixed(1)),
    machine: `${cpus().length} cores, 1-min load average ${load.map((l) => l.toFixed(1)).join(" → ")}${args.note ? `; ${args.note}` : ""}`,
    method: `${args.points ? `given points ${args.points} (grid ${JSON.stringify(axes)})` : `coarse grid ${JSON.stringify(axes)}`}, 1 run each; then the top ${args.top} and the best's neighbours, ${args.rounds} interleaved rounds; a winner on a knob's top edge climbs (the knob doubled, ${args.rounds} rounds against it) until it loses; ${jobs} no-op jobs per run, rate from the worker's ready to the moment the store showed every job completed; winner: highest median among the refined points`,
    best: winner.settings,
    label: describeKnobs(winner.settings),
    table: table(),
    findings: findings.splice(0),
  };
}

const file = readPeerSettings();
file.about ??= "Each peer's best worker settings, found by `npm run bench:sweep` (bench/sweep.js); `npm run bench` uses `best` for the process_best and two_workers rows. Re-run the sweep when a peer is upgraded.";
file.peers ??= {};
for (const peer of args.peers.split(",")) {
  if (!packages[peer]) throw new Error(`unknown peer ${peer} (one of ${Object.keys(packages).join(", ")})`);
  const result = await sweepPeer(peer);
  console.log(`\n## ${systems[peer]} ${result.version}: best ${result.label} (${result.table.find((r) => r.settings === result.best).median.toLocaleString("en")} jobs/s median)\n`);
  console.log(`| settings | median jobs/s | runs |\n| --- | --- | --- |`);
  for (const row of result.table) console.log(`| ${describeKnobs(row.settings)} | ${row.median.toLocaleString("en")} | ${row.runs.map((v) => v ?? "failed").join(", ")} |`);
  if (!args["dry-run"]) {
    file.peers[peer] = result;
    writeFileSync(peerSettingsUrl, `${JSON.stringify(file, null, 2)}\n`); // after each peer: a long sweep keeps what it found
  }
}
process.exit(0);
