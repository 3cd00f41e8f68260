import type { Command } from "commander";
import type { ScheduleInfo } from "../schedules/info.js";
import type { SchedulerEvent } from "../schedules/scheduler.js";
import { type DatabaseFlags, logLine, openFromFlags, withDatabase } from "./common.js";

/** `errand schedules [list|pause|resume|remove]`. */
export function register(program: Command): void {
  const schedules = program.command("schedules").description("list recurring schedules (next run, last slot, last success, policy); pause, resume or remove one");

  withDatabase(
    schedules
      .command("list", { isDefault: true })
      .description("each schedule with its next run, last slot, last success and policy")
      .option("--json", "one JSON object per line"),
  ).action(async (flags: DatabaseFlags & { json?: boolean }) => {
    const errand = await openFromFlags(flags);
    try {
      const list = await errand.schedules.list();
      if (flags.json) {
        for (const info of list) console.log(JSON.stringify(info));
        return;
      }
      console.log(list.length === 0 ? "no schedules" : formatTable(list));
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

/** An aligned table, one schedule per row. */
function formatTable(list: readonly ScheduleInfo[]): string {
  const header = ["NAME", "CRON", "ZONE", "KIND", "NEXT RUN", "LAST SLOT", "LAST SUCCESS", "POLICY"];
  const rows = list.map((s) => [
    s.name,
    s.cron,
    s.timezone,
    s.kind,
    s.paused ? "paused" : time(s.nextRun),
    s.lastSlot === null ? "-" : `${time(s.lastSlot)}${lastOutcome(s)}`,
    s.lastSuccess === null ? "-" : time(s.lastSuccess.slot),
    `overlap ${s.overlap}, missed ${s.missed}${s.missed === "catch_up" ? ` (≤${s.catchUpLimit})` : ""}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  return [header, ...rows].map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}

function lastOutcome(s: ScheduleInfo): string {
  const enqueued = s.lastEnqueued && s.lastSlot && s.lastEnqueued.slot.getTime() === s.lastSlot.getTime() ? s.lastEnqueued : null;
  if (enqueued) return ` (job ${enqueued.jobId} ${enqueued.status ?? "purged"})`;
  if (s.lastSkipped && s.lastSlot && s.lastSkipped.slot.getTime() === s.lastSlot.getTime()) return ` (skipped: ${s.lastSkipped.reason.split(":")[0]})`;
  return "";
}

function time(date: Date | null): string {
  return date === null ? "-" : date.toISOString().replace(".000Z", "Z");
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
