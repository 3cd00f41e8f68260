// PostgreSQL's CPU time, read from /proc/<pid>/stat of its processes (the bench's server
// runs on this machine): for the idle-workers scenario, where the cost is too small and
// too spread out to see any other way.
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { withPg } from "./common.js";

let ticksPerSecond;

/** CPU seconds (user + system) of every running postgres process, by pid. */
export function postgresCpu() {
  ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  const cpu = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // it exited meanwhile
    }
    const open = stat.indexOf("(");
    const close = stat.lastIndexOf(")");
    if (stat.slice(open + 1, close) !== "postgres") continue;
    const fields = stat.slice(close + 2).split(" "); // fields[0] is field 3 (state): utime is field 14, stime 15
    cpu.set(Number(name), (Number(fields[11]) + Number(fields[12])) / ticksPerSecond);
  }
  if (cpu.size === 0) {
    const error = new Error("no postgres process is visible in /proc: PostgreSQL's CPU can only be read on its own machine");
    error.missingTool = true;
    throw error;
  }
  return cpu;
}

/** CPU seconds spent between two {@link postgresCpu} readings, by the pids in `only` (all if absent); a process that started meanwhile counts whole. */
export function cpuBetween(before, after, only) {
  let seconds = 0;
  for (const [pid, now] of after) if (!only || only.has(pid)) seconds += now - (before.get(pid) ?? 0);
  return seconds;
}

/**
 * Samples {@link postgresCpu} every `intervalMs` until the returned function is called,
 * which returns the CPU seconds every postgres process spent meanwhile: a backend that
 * exited before the end counts up to its last sample (a reading at the end alone would
 * miss the backends of workers that closed their connections).
 */
export function samplePostgresCpu(intervalMs = 100) {
  const first = postgresCpu();
  const last = new Map(first);
  const sample = () => {
    for (const [pid, seconds] of postgresCpu()) last.set(pid, seconds);
  };
  const timer = setInterval(sample, intervalMs);
  return () => {
    clearInterval(timer);
    sample();
    let seconds = 0;
    for (const [pid, now] of last) seconds += now - (first.get(pid) ?? 0);
    return seconds;
  };
}

/** The pids of the server processes serving connections named `applicationName`. */
export async function backendsOf(applicationName) {
  return withPg(async (c) => new Set((await c.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [applicationName])).rows.map((r) => r.pid)));
}
