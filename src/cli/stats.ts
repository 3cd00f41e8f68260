import type { Command } from "commander";
import { humanAge } from "../human-format.js";
import type { JetStreamQueueReport, KindStats, QueueStats, UnservedJobs } from "../observe/stats.js";
import { defaultQueue, defaultWatchMs } from "../defaults.js";
import type { QueueDepth } from "../queues.js";
import { type DatabaseFlags, inSeconds, openFromFlags, secondsArg, withDatabase } from "./common.js";
import { type JetStreamFlags, jetstreamQueueOptions, jetstreamQueues, withJetStream } from "./jetstream-flags.js";
import { checkKindFilter } from "./kind-filter.js";
import { type Terminal, paint, printJson, terminal } from "./output.js";
import { type Column, renderTable } from "./table.js";

interface StatsFlags extends DatabaseFlags, JetStreamFlags {
  readonly json?: boolean;
  readonly watch?: number | true;
  readonly kind?: string;
}

/** Clears a terminal and puts the cursor top left, so each refresh redraws in place. */
const redraw = "\x1b[H\x1b[2J";

/** `errand stats [--json] [--watch [seconds]] [--kind K]`: queue depth, ages, recent outcomes (timeouts and cancels too), dead letters. */
export function register(program: Command): void {
  withDatabase(
    withJetStream(
      program
        .command("stats")
        .description("queue figures per kind and in total: ready, scheduled, running, done, dead, cancelled, oldest ready age, recent outcomes (timeouts and cancels among them)")
        .option("--json", "print one JSON object (with --watch, one per refresh, one per line)")
        .option("--watch [seconds]", `refresh every few seconds (default ${inSeconds(defaultWatchMs)}) until Ctrl-C: in place on a terminal, one snapshot after another when piped`, secondsArg(false))
        .option("--kind <kind>", "only this kind"),
      "also show",
    ),
  ).action(async (flags: StatsFlags) => {
    const jetstream = jetstreamQueueOptions(flags); // bad flags fail before connecting
    const errand = await openFromFlags(flags);
    jetstreamQueues(errand, jetstream);
    let first = true;
    const show = async () => {
      const stats = await errand.stats();
      if (first && flags.kind !== undefined && !stats.kinds[flags.kind]) await checkKindFilter(errand, flags.kind, stats);
      const shown = flags.kind === undefined ? stats : { ...stats, kinds: stats.kinds[flags.kind] ? { [flags.kind]: stats.kinds[flags.kind]! } : {} };
      if (flags.json) printJson(shown);
      else {
        const term = terminal();
        // Piped, each snapshot follows the last, a blank line between: a log, not a screen.
        const before = flags.watch === undefined ? "" : term.tty ? redraw : first ? "" : "\n";
        process.stdout.write(`${before}${formatStats(shown, flags.kind === undefined, term)}`);
      }
      first = false;
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

/** A figure per column; the ranked ones give way, highest rank first, on a narrow terminal. */
const columns: readonly Column<[string, KindStats]>[] = [
  { header: "kind", cell: ([kind]) => kind, minWidth: 12 },
  { header: "ready", cell: ([, s]) => count(s.ready), right: true },
  { header: "scheduled", cell: ([, s]) => count(s.scheduled), right: true },
  { header: "running", cell: ([, s]) => count(s.running), right: true },
  { header: "done", cell: ([, s]) => count(s.done), right: true, hideRank: 3 },
  { header: "dead", cell: ([, s]) => count(s.dead), right: true, style: ([, s]) => (s.dead > 0 ? "red" : undefined) },
  { header: "cancelled", cell: ([, s]) => count(s.cancelled), right: true, hideRank: 9 },
  { header: "oldest ready", cell: ([, s]) => (s.oldestReadyAgeMs === null ? "-" : humanAge(s.oldestReadyAgeMs)), right: true },
  { header: "expired leases", cell: ([, s]) => count(s.expiredLeases), right: true, hideRank: 1, style: ([, s]) => (s.expiredLeases > 0 ? "yellow" : undefined) },
  { header: "done/1m", cell: ([, s]) => count(s.lastMinute.completed), right: true, hideRank: 7 },
  { header: "failed/1m", cell: ([, s]) => count(s.lastMinute.failed), right: true, hideRank: 6 },
  { header: "timed out/1m", cell: ([, s]) => count(s.lastMinute.timedOut), right: true, hideRank: 11, style: ([, s]) => (s.lastMinute.timedOut > 0 ? "yellow" : undefined) },
  { header: "cancelled/1m", cell: ([, s]) => count(s.lastMinute.cancelled), right: true, hideRank: 12 },
  { header: "done/1h", cell: ([, s]) => count(s.lastHour.completed), right: true, hideRank: 5 },
  { header: "failed/1h", cell: ([, s]) => count(s.lastHour.failed), right: true, hideRank: 4 },
  { header: "timed out/1h", cell: ([, s]) => count(s.lastHour.timedOut), right: true, hideRank: 8, style: ([, s]) => (s.lastHour.timedOut > 0 ? "yellow" : undefined) },
  { header: "cancelled/1h", cell: ([, s]) => count(s.lastHour.cancelled), right: true, hideRank: 10 },
  { header: "fail rate/1h", cell: ([, s]) => (s.lastHour.failureRate === null ? "-" : `${(s.lastHour.failureRate * 100).toFixed(1)}%`), right: true, hideRank: 2 },
];

const queueColumns: readonly Column<[string, QueueDepth]>[] = [
  { header: "queue", cell: ([name]) => name, minWidth: 12 },
  { header: "ready", cell: ([, q]) => count(q.ready), right: true },
  { header: "scheduled", cell: ([, q]) => count(q.scheduled), right: true },
  { header: "running", cell: ([, q]) => count(q.running), right: true },
  { header: "limit", cell: ([, q]) => (q.limit === null ? "" : count(q.limit)), right: true },
  { header: "state", cell: ([, q]) => (q.paused ? "paused" : "active"), style: ([, q]) => (q.paused ? "yellow" : undefined) },
];

const unservedColumns: readonly Column<UnservedJobs>[] = [
  { header: "queue", cell: (u) => u.queue, minWidth: 12 },
  { header: "kind", cell: (u) => u.kind, minWidth: 16, style: () => "yellow" },
  { header: "ready", cell: (u) => count(u.ready), right: true },
];

const jetstreamColumns: readonly Column<JetStreamQueueReport>[] = [
  { header: "JetStream queue", cell: (q) => q.queue, minWidth: 15 },
  { header: "outbox", cell: (q) => ("error" in q ? "-" : count(q.outbox)), right: true },
  { header: "pending", cell: (q) => ("error" in q ? "-" : count(q.pending)), right: true },
  { header: "ack pending", cell: (q) => ("error" in q ? "-" : count(q.ackPending)), right: true },
  { header: "redelivered", cell: (q) => ("error" in q ? "-" : count(q.redelivered)), right: true, style: (q) => ("error" in q || q.redelivered === 0 ? undefined : "yellow") },
  { header: "state", cell: (q) => ("error" in q ? `unreachable: ${q.error}` : "ok"), minWidth: 12, style: (q) => ("error" in q ? "red" : undefined) },
];

/** The stats as a table, one row per kind and a total, then when they were read. */
function formatStats(stats: QueueStats, withTotal: boolean, term: Terminal): string {
  const rows: [string, KindStats][] = Object.entries(stats.kinds);
  if (withTotal) rows.push(["(total)", stats.total]);
  const lines = renderTable(columns, rows, term);
  // Queues only once there is more than the default one, or a pause: the common case stays one table.
  const queues = Object.entries(stats.queues);
  if (queues.some(([name, q]) => name !== defaultQueue || q.paused || q.limit !== null) || stats.pausedKinds.length > 0) {
    lines.push("", ...renderTable(queueColumns, queues, term));
    if (stats.pausedKinds.length > 0) lines.push(paint(term, "yellow", `paused kinds: ${stats.pausedKinds.join(", ")} (errand resume --kind K)`));
  }
  for (const l of stats.limits) {
    const held = l.rateHeld > 0 ? `, ${count(l.rateHeld)} held by its rate` : "";
    lines.push(`limit ${l.key}: ${count(l.running)} running${l.concurrency === null ? "" : ` of ${count(l.concurrency)}`}, ${count(l.ready)} ready${held}`);
  }
  if (stats.unserved.length > 0) {
    lines.push(paint(term, "yellow", "ready jobs no live worker serves (a mistyped kind?):"), ...renderTable(unservedColumns, stats.unserved, term));
  }
  if (stats.jetstream) lines.push("", ...renderTable(jetstreamColumns, stats.jetstream, term));
  lines.push(`at ${stats.at.toISOString()}`);
  const dead = stats.total.dead;
  if (dead > 0) lines.push(paint(term, "red", `${dead} dead ${dead === 1 ? "job waits" : "jobs wait"} for a person: errand dead list`));
  return `${lines.join("\n")}\n`;
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}
