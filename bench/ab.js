#!/usr/bin/env node
// A/B of errand builds on one scenario, interleaved run by run (order rotated), medians:
// for a change to the worker or its SQL, against a baseline checkout's build.
//   git worktree add /tmp/base <commit> && (cd /tmp/base && npm ci && npm run build)
//   node bench/ab.js --runs 5 --jobs 30000 --mode default /tmp/base/dist/index.js dist/index.js
// Prints jobs/s and the worker's Node CPU per job (µs; start-up excluded) per build.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { median } from "./lib/common.js";
import { processJobs } from "./lib/scenarios.js";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { jobs: { type: "string", default: "30000" }, runs: { type: "string", default: "5" }, mode: { type: "string", default: "default" } },
});
if (positionals.length < 2) throw new Error("give two or more builds: path/to/dist/index.js …");
const builds = positionals.map((p) => resolve(p));
const results = new Map(builds.map((b) => [b, { rate: [], cpu: [] }]));
for (let run = 1; run <= Number(args.runs); run++) {
  for (let i = 0; i < builds.length; i++) {
    const build = builds[(i + run - 1) % builds.length];
    process.env.BENCH_ERRAND_DIST = build; // read by the adapter here and in the worker child
    const r = await processJobs("errand", `ab_${builds.indexOf(build)}_${run}`, { count: Number(args.jobs), capMs: 60_000, mode: args.mode });
    results.get(build).rate.push(r.value);
    results.get(build).cpu.push(r.cpuUsPerJob);
    console.error(`run ${run} ${build}: ${r.value.toFixed(0)} jobs/s, ${r.cpuUsPerJob.toFixed(1)} µs CPU/job`);
  }
}
for (const [build, { rate, cpu }] of results) {
  console.log(`${Math.round(median(rate)).toLocaleString("en").padStart(8)} jobs/s (${rate.map((x) => x.toFixed(0)).join(", ")})  ` +
    `${median(cpu).toFixed(1)} µs CPU/job (${cpu.map((x) => x.toFixed(1)).join(", ")})  ${build}`);
}
process.exit(0);
