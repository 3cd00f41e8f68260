import type { Command } from "commander";
import { defaultPurgeBatchSize, defaultPurgeDutyCycle, defaultRetentionMs } from "../defaults.js";
import { humanAge, parseDuration } from "../human-format.js";
import { share } from "../validate.js";
import { type DatabaseFlags, intArg, openFromFlags, withDatabase } from "./common.js";
import { printJson } from "./output.js";

interface PurgeFlags extends DatabaseFlags {
  readonly olderThan?: string;
  readonly deadOlderThan?: string;
  readonly batchSize?: number;
  readonly dutyCycle?: string;
  readonly dryRun?: boolean;
  readonly json?: boolean;
}

/** `errand purge [--older-than 7d] [--dead-older-than 30d] [--dry-run]`: deletes old done and cancelled jobs in small batches. */
export function register(program: Command): void {
  withDatabase(
    program
      .command("purge")
      .description("delete done and cancelled jobs older than the retention in small batches; dead jobs are kept unless --dead-older-than is given")
      .option("--older-than <duration>", `delete done and cancelled jobs finished longer ago than this (default ${defaultRetentionMs / 86_400_000}d)`)
      .option("--dead-older-than <duration>", "also delete dead jobs that died longer ago than this")
      .option("--batch-size <n>", `rows per DELETE, each its own short transaction (default ${defaultPurgeBatchSize})`, intArg(1, 100_000))
      .option("--duty-cycle <share>", `the share of its time the purge spends deleting, resting the rest after each batch; 1: no rests (default ${defaultPurgeDutyCycle})`)
      .option("--dry-run", "only count what would be deleted")
      .option("--json", 'print one JSON object: {"done", "cancelled", "dead", "finishedBatches", "batches", "dryRun"}'),
  ).action(async (flags: PurgeFlags) => {
    const olderThanMs = flags.olderThan === undefined ? defaultRetentionMs : parseDuration(flags.olderThan, "--older-than");
    const deadOlderThanMs = flags.deadOlderThan === undefined ? undefined : parseDuration(flags.deadOlderThan, "--dead-older-than");
    // Checked before the database is opened, as the durations are.
    const dutyCycle = flags.dutyCycle === undefined ? undefined : share(flags.dutyCycle.trim() === "" ? Number.NaN : Number(flags.dutyCycle), "--duty-cycle");
    const errand = await openFromFlags(flags);
    try {
      const result = await errand.purge({
        olderThanMs,
        ...(deadOlderThanMs === undefined ? {} : { deadOlderThanMs }),
        ...(flags.batchSize === undefined ? {} : { batchSize: flags.batchSize }),
        ...(dutyCycle === undefined ? {} : { dutyCycle }),
        dryRun: flags.dryRun === true,
      });
      if (flags.json) {
        printJson(result);
        return;
      }
      const verb = result.dryRun ? "would delete" : "deleted";
      const jobs = (n: number, what: string) => `${n.toLocaleString("en-US")} ${what} job${n === 1 ? "" : "s"}`;
      let line = `${verb} ${jobs(result.done, "done")} and ${jobs(result.cancelled, "cancelled")} finished more than ${humanAge(olderThanMs)} ago`;
      line += deadOlderThanMs === undefined ? "; dead jobs kept (see errand dead list)" : `, and ${jobs(result.dead, "dead")} older than ${humanAge(deadOlderThanMs)}`;
      if (result.finishedBatches > 0) line += `; ${result.finishedBatches.toLocaleString("en-US")} finished batch record${result.finishedBatches === 1 ? "" : "s"}`;
      if (!result.dryRun) line += ` (${result.batches} DELETE${result.batches === 1 ? "" : "s"})`;
      process.stdout.write(`${line}\n`);
    } finally {
      await errand.close();
    }
  });
}
