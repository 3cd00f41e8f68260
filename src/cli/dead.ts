import { type Command, InvalidArgumentError } from "commander";
import type { DeadSelector } from "../client.js";
import { defaultDeadListLimit } from "../defaults.js";
import { isJobId } from "../validate.js";
import { type DatabaseFlags, intArg, openFromFlags, withDatabase } from "./common.js";

interface SelectFlags extends DatabaseFlags {
  readonly kind?: string;
  readonly all?: boolean;
}

export function register(program: Command): void {
  const dead = program.command("dead").description("list, retry or discard dead jobs (the to-do list of failures)");

  withDatabase(
    dead
      .command("list")
      .description("list dead jobs with their last error")
      .option("--kind <kind>", "only this kind")
      .option("--limit <n>", `at most this many (default ${defaultDeadListLimit})`, intArg(1, 10_000))
      .option("--json", "one JSON object per line"),
  ).action(async (flags: DatabaseFlags & { kind?: string; limit?: number; json?: boolean }) => {
    const errand = await openFromFlags(flags);
    try {
      const jobs = await errand.dead.list({ ...(flags.kind ? { kind: flags.kind } : {}), ...(flags.limit ? { limit: flags.limit } : {}) });
      if (flags.json) {
        for (const job of jobs) console.log(JSON.stringify(job));
        return;
      }
      if (jobs.length === 0) {
        console.log("no dead jobs");
        return;
      }
      for (const job of jobs) {
        const firstLine = (job.lastError ?? "").split("\n")[0];
        console.log(`${job.id}\t${job.kind}\tattempts ${job.attempts}/${job.maxAttempts}\tdied ${job.finishedAt?.toISOString() ?? "?"}\t${firstLine}`);
      }
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
        .option("--all", "every dead job"),
    ).action(async (ids: string[], flags: SelectFlags) => {
      const selector = select(ids, flags);
      const errand = await openFromFlags(flags);
      try {
        const changed = await errand.dead[name](selector);
        console.log(`${past} ${changed.length} job${changed.length === 1 ? "" : "s"}${changed.length ? `: ${changed.join(", ")}` : ""}`);
      } finally {
        await errand.close();
      }
    });
  }
}

function select(ids: string[], flags: SelectFlags): DeadSelector {
  const chosen = [ids.length > 0, flags.kind !== undefined, flags.all === true].filter(Boolean).length;
  if (chosen !== 1) throw new InvalidArgumentError("give job ids, --kind KIND or --all (exactly one)");
  for (const id of ids) if (!isJobId(id)) throw new InvalidArgumentError(`job id '${id}' is not a positive integer`);
  if (ids.length) return { ids };
  if (flags.kind !== undefined) return { kind: flags.kind };
  return { all: true };
}
