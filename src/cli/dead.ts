import { type Command, InvalidArgumentError } from "commander";
import type { DeadSelector } from "../client.js";
import { defaultDeadListLimit } from "../defaults.js";
import type { Job } from "../job.js";
import { isJobId } from "../validate.js";
import { type DatabaseFlags, intArg, openFromFlags, withDatabase } from "./common.js";
import { checkKindFilter } from "./kind-filter.js";
import { printJson, terminal } from "./output.js";
import { type Column, renderTable } from "./table.js";

interface SelectFlags extends DatabaseFlags {
  readonly kind?: string;
  readonly all?: boolean;
  readonly json?: boolean;
}

/** `errand dead list|retry|discard`. */
export function register(program: Command): void {
  const dead = program.command("dead").description("list, retry or discard dead jobs (the to-do list of failures)");

  withDatabase(
    dead
      .command("list")
      .description("list dead jobs with their last error")
      .option("--kind <kind>", "only this kind")
      .option("--limit <n>", `at most this many (default ${defaultDeadListLimit})`, intArg(1, 10_000))
      .option("--json", "print a JSON array of the jobs"),
  ).action(async (flags: DatabaseFlags & { kind?: string; limit?: number; json?: boolean }) => {
    const errand = await openFromFlags(flags);
    try {
      const jobs = await errand.dead.list({ ...(flags.kind !== undefined ? { kind: flags.kind } : {}), ...(flags.limit ? { limit: flags.limit } : {}) });
      if (jobs.length === 0 && flags.kind !== undefined) await checkKindFilter(errand, flags.kind);
      if (flags.json) printJson(jobs);
      else if (jobs.length === 0) console.log("no dead jobs");
      else console.log(renderTable(deadColumns, jobs, terminal()).join("\n"));
    } finally {
      await errand.close();
    }
  });

  for (const [name, verb, past] of [
    ["retry", "put back to ready with attempts reset (errors kept)", "retried"],
    ["discard", "delete for good", "discarded"],
  ] as const) {
    withDatabase(
      dead
        .command(name)
        .description(`${verb}: dead jobs by id, by kind, or all`)
        .argument("[ids...]", "job ids")
        .option("--kind <kind>", "every dead job of this kind")
        .option("--all", "every dead job")
        .option("--json", `print {"ids": [...]}, the ids ${past}`),
    ).action(async (ids: string[], flags: SelectFlags) => {
      const selector = select(ids, flags);
      const errand = await openFromFlags(flags);
      try {
        const changed = await errand.dead[name](selector);
        if (changed.length === 0 && flags.kind !== undefined) await checkKindFilter(errand, flags.kind);
        if (flags.json) printJson({ ids: changed });
        else console.log(`${past} ${changed.length} job${changed.length === 1 ? "" : "s"}${changed.length ? `: ${changed.join(", ")}` : ""}`);
      } finally {
        await errand.close();
      }
    });
  }
}

/** The dead list's columns: the error takes what width is left (its first line only); on a narrow terminal the time of death gives way first. */
const deadColumns: readonly Column<Job>[] = [
  { header: "ID", cell: (job) => job.id, right: true },
  { header: "KIND", cell: (job) => job.kind, minWidth: 12 },
  { header: "ATTEMPTS", cell: (job) => `${job.attempts}/${job.maxAttempts}`, right: true, hideRank: 1 },
  { header: "DIED", cell: (job) => (job.finishedAt === null ? "?" : `${job.finishedAt.toISOString().slice(0, 19)}Z`), hideRank: 2 },
  { header: "LAST ERROR", cell: (job) => (job.lastError ?? "").split("\n")[0]!, minWidth: 24, style: () => "red" },
];

function select(ids: string[], flags: SelectFlags): DeadSelector {
  const chosen = [ids.length > 0, flags.kind !== undefined, flags.all === true].filter(Boolean).length;
  if (chosen !== 1) throw new InvalidArgumentError("give job ids, --kind KIND or --all (exactly one)");
  for (const id of ids) if (!isJobId(id)) throw new InvalidArgumentError(`job id '${id}' is not a positive integer`);
  if (ids.length) return { ids };
  if (flags.kind !== undefined) return { kind: flags.kind };
  return { all: true };
}
