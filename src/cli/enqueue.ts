import { type Command, InvalidArgumentError } from "commander";
import { type DatabaseFlags, intArg, openFromFlags, secondsArg, withDatabase } from "./common.js";

interface EnqueueFlags extends DatabaseFlags {
  readonly dedupeKey?: string;
  readonly runAt?: Date;
  readonly delay?: number;
  readonly maxAttempts?: number;
  readonly priority?: number;
}

export function register(program: Command): void {
  withDatabase(
    program
      .command("enqueue")
      .description("enqueue one job and print its id")
      .argument("<kind>", "job kind, e.g. send_receipt")
      .argument("<json>", "payload as JSON, e.g. '{\"order_id\": 1042}'", parseJsonArg)
      .option("--dedupe-key <key>", "a second enqueue with the same key is a no-op")
      .option("--run-at <iso>", "run no earlier than this ISO 8601 time", parseTime)
      .option("--delay <seconds>", "run no earlier than this many seconds from now", secondsArg())
      .option("--max-attempts <n>", "attempts before the job is dead (default 8)", intArg(1, 1_000_000))
      .option("--priority <n>", "higher runs first (default 0)", intArg(-2_147_483_648, 2_147_483_647)),
  ).action(async (kind: string, payload: unknown, flags: EnqueueFlags) => {
    if (flags.runAt && flags.delay !== undefined) throw new InvalidArgumentError("give --run-at or --delay, not both");
    const errand = await openFromFlags(flags);
    try {
      const result = await errand.enqueue(kind, payload, {
        ...(flags.dedupeKey !== undefined ? { dedupeKey: flags.dedupeKey } : {}),
        ...(flags.runAt ? { runAt: flags.runAt } : {}),
        ...(flags.delay !== undefined ? { delay: flags.delay } : {}),
        ...(flags.maxAttempts !== undefined ? { maxAttempts: flags.maxAttempts } : {}),
        ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
      });
      console.log(result.id);
      if (result.duplicate) console.error(`duplicate: a job with dedupe key '${flags.dedupeKey}' already exists (id ${result.id}); nothing was enqueued`);
    } finally {
      await errand.close();
    }
  });
}

function parseJsonArg(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch (error) {
    throw new InvalidArgumentError(`not valid JSON (${(error as Error).message})`);
  }
}

function parseTime(value: string): Date {
  const date = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(date.getTime())) throw new InvalidArgumentError("must be an ISO 8601 time, e.g. 2026-12-01T09:00:00Z");
  return date;
}
