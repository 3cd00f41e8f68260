import type { Command } from "commander";
import { humanAge } from "../human-format.js";
import type { KindStats, QueueStats } from "../observe/stats.js";
import { defaultWatchMs } from "../defaults.js";
import { type DatabaseFlags, inSeconds, openFromFlags, secondsArg, withDatabase } from "./common.js";

interface StatsFlags extends DatabaseFlags {
  readonly json?: boolean;
  readonly watch?: number | true;
  readonly kind?: string;
}

/** `errand stats [--json] [--watch [seconds]]`: queue depth, ages, recent outcomes, dead letters. */
export function register(program: Command): void {
  withDatabase(
    program
      .command("stats")
      .description("queue figures per kind and in total: ready, scheduled, running, done, dead, oldest ready age, recent outcomes")
      .option("--json", "print JSON (one object per line with --watch)")
      .option("--watch [seconds]", `refresh every few seconds (default ${inSeconds(defaultWatchMs)}) until Ctrl-C`, secondsArg(false))
      .option("--kind <kind>", "only this kind"),
  ).action(async (flags: StatsFlags) => {
    const errand = await openFromFlags(flags);
    const show = async () => {
      const stats = await errand.stats();
      const shown = flags.kind === undefined ? stats : { ...stats, kinds: stats.kinds[flags.kind] ? { [flags.kind]: stats.kinds[flags.kind]! } : {} };
      if (flags.json) process.stdout.write(`${JSON.stringify(shown)}\n`);
      else process.stdout.write(`${flags.watch && process.stdout.isTTY ? "\x1b[2J\x1b[H" : ""}${formatStats(shown, flags.kind === undefined)}`);
    };
    if (flags.watch === undefined) {
      try {
        await show();
      } finally {
        await errand.close();
      }
      return;
    }
    const everyMs = flags.watch === true ? defaultWatchMs : flags.watch;
    let stopped = false;
    const stop = () => {
      stopped = true;
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    try {
      while (!stopped) {
        await show();
        await new Promise((resolve) => setTimeout(resolve, everyMs));
      }
    } finally {
      await errand.close();
    }
  });
}

const columns: readonly [string, (s: KindStats) => string][] = [
  ["ready", (s) => count(s.ready)],
  ["scheduled", (s) => count(s.scheduled)],
  ["running", (s) => count(s.running)],
  ["done", (s) => count(s.done)],
  ["dead", (s) => count(s.dead)],
  ["oldest ready", (s) => (s.oldestReadyAgeMs === null ? "-" : humanAge(s.oldestReadyAgeMs))],
  ["expired leases", (s) => count(s.expiredLeases)],
  ["done/1m", (s) => count(s.lastMinute.completed)],
  ["failed/1m", (s) => count(s.lastMinute.failed)],
  ["done/1h", (s) => count(s.lastHour.completed)],
  ["failed/1h", (s) => count(s.lastHour.failed)],
  ["fail rate/1h", (s) => (s.lastHour.failureRate === null ? "-" : `${(s.lastHour.failureRate * 100).toFixed(1)}%`)],
];

/** The stats as an aligned table, one row per kind and a total. */
function formatStats(stats: QueueStats, withTotal = true): string {
  const rows: string[][] = [["kind", ...columns.map(([name]) => name)]];
  for (const [kind, s] of Object.entries(stats.kinds)) rows.push([kind, ...columns.map(([, cell]) => cell(s))]);
  if (withTotal) rows.push(["(total)", ...columns.map(([, cell]) => cell(stats.total))]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const lines = rows.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ").trimEnd());
  const dead = stats.total.dead;
  const footer = dead > 0 ? `\n${dead} dead ${dead === 1 ? "job waits" : "jobs wait"} for a person: errand dead list` : "";
  return `${lines.join("\n")}\nat ${stats.at.toISOString()}${footer}\n`;
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}
