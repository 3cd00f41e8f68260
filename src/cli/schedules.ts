import type { Command } from "commander";
import type { ScheduleInfo } from "../schedules/info.js";
import type { SchedulerEvent } from "../schedules/scheduler.js";
import { type DatabaseFlags, logLine, openFromFlags, withDatabase } from "./common.js";
import { printJson, terminal } from "./output.js";
import { type Column, renderTable } from "./table.js";

/** `errand schedules [list|pause|resume|remove]`. */
export function register(program: Command): void {
  const schedules = program.command("schedules").description("list recurring schedules (next run, last slot, last success, policy); pause, resume or remove one");

  withDatabase(
    schedules
      .command("list", { isDefault: true })
      .description("each schedule with its next run, last slot, last success and policy")
      .option("--json", "print a JSON array of the schedules"),
  ).action(async (flags: DatabaseFlags & { json?: boolean }) => {
    const errand = await openFromFlags(flags);
    try {
      const list = await errand.schedules.list();
      if (flags.json) printJson(list);
      else console.log(list.length === 0 ? "no schedules" : renderTable(scheduleColumns, list, terminal()).join("\n"));
    } finally {
      await errand.close();
    }
  });

  for (const [name, description, past] of [
    ["pause", "stop enqueueing a schedule's slots (jobs already enqueued still run)", "paused"],
    ["resume", "enqueue again, from the next slot after now", "resumed"],
    ["remove", "delete a schedule and its run history (its jobs are kept)", "removed"],
  ] as const) {
    withDatabase(schedules.command(name).description(description).argument("<name>", "schedule name")).action(async (schedule: string, flags: DatabaseFlags) => {
      const errand = await openFromFlags(flags);
      try {
        await errand.schedules[name](schedule);
        console.log(`${past} schedule '${schedule}'`);
      } finally {
        await errand.close();
      }
    });
  }
}

/**
 * One schedule per row. On a narrow terminal the configuration (policy, zone, kind, cron)
 * gives way before what it is doing now (next run, last slot and how it went).
 */
const scheduleColumns: readonly Column<ScheduleInfo>[] = [
  { header: "NAME", cell: (s) => s.name, minWidth: 12 },
  { header: "CRON", cell: (s) => s.cron, minWidth: 9, hideRank: 1 },
  { header: "ZONE", cell: (s) => s.timezone, minWidth: 8, hideRank: 5 },
  { header: "KIND", cell: (s) => s.kind, minWidth: 10, hideRank: 4 },
  { header: "NEXT RUN", cell: (s) => (s.paused ? "paused" : time(s.nextRun)), style: (s) => (s.paused ? "yellow" : undefined) },
  { header: "LAST SLOT", cell: (s) => time(s.lastSlot) },
  { header: "OUTCOME", cell: lastOutcome, minWidth: 10, hideRank: 2, style: (s) => (/dead|skipped/.test(lastOutcome(s)) ? "yellow" : undefined) },
  { header: "LAST SUCCESS", cell: (s) => time(s.lastSuccess?.slot ?? null), hideRank: 3 },
  { header: "POLICY", cell: (s) => `overlap ${s.overlap}, missed ${s.missed}${s.missed === "catch_up" ? ` (≤${s.catchUpLimit})` : ""}`, minWidth: 12, hideRank: 6 },
];

/** What became of the last slot: its job and that job's status now, or why it was skipped. */
function lastOutcome(s: ScheduleInfo): string {
  const enqueued = s.lastEnqueued && s.lastSlot && s.lastEnqueued.slot.getTime() === s.lastSlot.getTime() ? s.lastEnqueued : null;
  if (enqueued) return `job ${enqueued.jobId} ${enqueued.status ?? "purged"}`;
  if (s.lastSkipped && s.lastSlot && s.lastSkipped.slot.getTime() === s.lastSlot.getTime()) return `skipped: ${s.lastSkipped.reason.split(":")[0]}`;
  return "-";
}

/** A slot in UTC, to the minute unless it has seconds (six-field crons): `2026-01-01T09:00Z`. */
function time(date: Date | null): string {
  if (date === null) return "-";
  const iso = date.toISOString();
  return iso.endsWith(":00.000Z") ? `${iso.slice(0, 16)}Z` : iso.replace(".000Z", "Z");
}

/** Logs a scheduler event as one JSON line, like the worker's events (used by `errand worker`). */
export function logSchedulerEvent(event: SchedulerEvent): void {
  switch (event.type) {
    case "enqueued":
      logLine({ level: "info", event: "schedule_enqueued", schedule: event.schedule, slot: event.slot.toISOString(), job: event.jobId });
      return;
    case "skipped":
      logLine({ level: "info", event: "schedule_skipped", schedule: event.schedule, slot: event.slot.toISOString(), reason: event.reason });
      return;
    case "missed":
      logLine({ level: "warn", event: "schedule_missed", schedule: event.schedule, from: event.from.toISOString(), to: event.to.toISOString(), reason: event.reason });
      return;
    case "error":
      logLine({ level: "error", event: "schedule_error", ...(event.schedule ? { schedule: event.schedule } : {}), error: event.error instanceof Error ? event.error.message : String(event.error) });
  }
}
