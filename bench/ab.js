#!/usr/bin/env node
// A/B of errand builds on one scenario, interleaved run by run (order rotated), medians:
// for a change to the worker or its SQL, against a baseline checkout's build.
//   git worktree add /tmp/base <commit> && (cd /tmp/base && npm ci && npm run build)
//   node bench/ab.js --runs 5 --jobs 30000 --mode default /tmp/base/dist/index.js dist/index.js
// Prints jobs/s, the worker's Node CPU per job (µs; start-up excluded) and the CPU per job
// of the PostgreSQL backends serving the worker (µs; from /proc, so only with the server on
// this machine; its connections are named by application_name) per build.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { median, pgUrl } from "./lib/common.js";
import { backendsOf, postgresCpu } from "./lib/pg-cpu.js";
import { processJobs } from "./lib/scenarios.js";

/** Samples the CPU of the backends named `name` until stopped; returns their CPU seconds (each backend's last reading). */
function sampleBackends(name) {
  const last = new Map();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const pids = await backendsOf(name);
      if (pids.size > 0) for (const [pid, seconds] of postgresCpu()) if (pids.has(pid)) last.set(pid, seconds);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    return [...last.values()].reduce((a, b) => a + b, 0);
  };
}

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { jobs: { type: "string", default: "30000" }, runs: { type: "string", default: "5" }, mode: { type: "string", default: "default" } },
});
if (positionals.length < 2) throw new Error("give two or more builds: path/to/dist/index.js …");
const builds = positionals.map((p) => resolve(p));
const results = new Map(builds.map((b) => [b, { rate: [], cpu: [], pg: [] }]));
for (let run = 1; run <= Number(args.runs); run++) {
  for (let i = 0; i < builds.length; i++) {
    const build = builds[(i + run - 1) % builds.length];
    process.env.BENCH_ERRAND_DIST = build; // read by the adapter here and in the worker child
    const name = `bench_ab_${process.pid}_${run}_${i}`;
    const env = { BENCH_ERRAND_URL: `${pgUrl}${pgUrl.includes("?") ? "&" : "?"}application_name=${name}` };
    const stop = sampleBackends(name);
    const r = await processJobs("errand", `ab_${builds.indexOf(build)}_${run}`, { count: Number(args.jobs), capMs: 60_000, mode: args.mode, env });
    const pgUs = ((await stop()) * 1e6) / Math.max(1, r.handled);
    results.get(build).rate.push(r.value);
    results.get(build).cpu.push(r.cpuUsPerJob);
    results.get(build).pg.push(pgUs);
    console.error(`run ${run} ${build}: ${r.value.toFixed(0)} jobs/s, ${r.cpuUsPerJob.toFixed(1)} µs CPU/job, PostgreSQL ${pgUs.toFixed(1)} µs/job`);
  }
}
for (const [build, { rate, cpu, pg }] of results) {
  console.log(`${Math.round(median(rate)).toLocaleString("en").padStart(8)} jobs/s (${rate.map((x) => x.toFixed(0)).join(", ")})  ` +
    `${median(cpu).toFixed(1)} µs CPU/job (${cpu.map((x) => x.toFixed(1)).join(", ")})  ` +
    `PostgreSQL ${median(pg).toFixed(1)} µs/job (${pg.map((x) => x.toFixed(1)).join(", ")})  ${build}`);
}
process.exit(0);
