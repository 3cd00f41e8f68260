#!/usr/bin/env node
// Tries errand worker settings side by side (interleaved, medians), to choose "best" and
// to measure proposed defaults before they are proposed:
//   node bench/tune.js --jobs 30000 --runs 3 '{"concurrency":10,"prefetch":10}' '{"concurrency":100,"prefetch":2000}'
// --workers N runs N worker processes per try (as eight_workers does), each with the settings.
import { parseArgs } from "node:util";
import { median } from "./lib/common.js";
import { processJobs } from "./lib/scenarios.js";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { jobs: { type: "string", default: "30000" }, runs: { type: "string", default: "3" }, workers: { type: "string", default: "1" }, raw: { type: "boolean", default: false } },
});
process.env.BENCH_ERRAND_VARIANTS = positionals.join("\n"); // read by the worker children
const variants = positionals.map((v) => ({ label: v, system: "errand", mode: `json:${v}` }));
if (args.raw) variants.push({ label: "raw SQL, 4 clients", system: "raw", mode: "best" });
const results = new Map(variants.map((v) => [v.label, []]));
for (let run = 1; run <= Number(args.runs); run++) {
  for (let i = 0; i < variants.length; i++) {
    const v = variants[(i + run - 1) % variants.length];
    const r = await processJobs(v.system, `tune_${v.system}_${i}`, { count: Number(args.jobs), capMs: 60_000, mode: v.mode, workers: Number(args.workers) });
    results.get(v.label).push(r.value);
    console.error(`run ${run} ${v.label}: ${r.value.toFixed(0)} jobs/s, rss ${r.maxRssMB.toFixed(0)} MB, ${r.cpuUsPerJob.toFixed(1)} µs CPU/job, PostgreSQL ${r.pgCpuUsPerJob?.toFixed(1) ?? "—"} µs/job`);
  }
}
for (const [label, values] of results) console.log(`${Math.round(median(values)).toLocaleString("en").padStart(8)} jobs/s  ${label}  (${values.map((x) => x.toFixed(0)).join(", ")})`);
process.exit(0);
