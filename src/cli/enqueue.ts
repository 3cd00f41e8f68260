import { type Command, InvalidArgumentError } from "commander";
import { defaultMaxAttempts, defaultMaxPayloadBytes, defaultPriority } from "../defaults.js";
import { type DedupeMode, encodeDedupe } from "../dedupe.js";
import { encodeJobs } from "../enqueue.js";
import { checkDate, maxMaxAttempts } from "../validate.js";
import { type DatabaseFlags, cliArg, intArg, openFromFlags, secondsArg, withDatabase } from "./common.js";
import { printJson } from "./output.js";

interface EnqueueFlags extends DatabaseFlags {
  readonly dedupeKey?: string;
  readonly dedupe?: DedupeMode;
  readonly runAt?: string;
  readonly delay?: number;
  readonly maxAttempts?: number;
  readonly priority?: number;
  readonly json?: boolean;
}

export function register(program: Command): void {
  withDatabase(
    program
      .command("enqueue")
      .description("enqueue one job and print its id (with --json, the job)")
      .argument("<kind>", "job kind, e.g. send_receipt")
      .argument("<json>", "payload as JSON, e.g. '{\"order_id\": 1042}'", parseJsonArg)
      .option("--dedupe-key <key>", "while the job holds this key (see --dedupe), an enqueue with it is a no-op")
      .option("--dedupe <mode>", "how long the job holds its key: retained (default), active, queued, replace, or a ttl in seconds (e.g. 3600)", cliArg(parseDedupe))
      .option("--run-at <iso>", "run no earlier than this ISO 8601 time, e.g. 2026-12-01T09:00:00Z", cliArg((value) => checkDate(value, "runAt")))
      .option("--delay <seconds>", "run no earlier than this many seconds from now", secondsArg())
      .option("--max-attempts <n>", `attempts before the job is dead (default ${defaultMaxAttempts})`, intArg(1, maxMaxAttempts))
      .option("--priority <n>", `higher runs first (default ${defaultPriority})`, intArg(-2_147_483_648, 2_147_483_647))
      .option("--json", 'print the job as one JSON object, with "duplicate": true when the dedupe key was taken'),
  ).action(async (kind: string, payload: unknown, flags: EnqueueFlags) => {
    if (flags.runAt && flags.delay !== undefined) throw new InvalidArgumentError("give --run-at or --delay, not both");
    const options = {
      ...(flags.dedupeKey !== undefined ? { dedupeKey: flags.dedupeKey } : {}),
      ...(flags.dedupe !== undefined ? { dedupe: flags.dedupe } : {}),
      ...(flags.runAt ? { runAt: flags.runAt } : {}),
      ...(flags.delay !== undefined ? { delay: flags.delay } : {}),
      ...(flags.maxAttempts !== undefined ? { maxAttempts: flags.maxAttempts } : {}),
      ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
    };
    // Bad input fails here, before connecting (opening the embedded database takes seconds).
    encodeJobs([{ kind, payload, ...options }], new Map(), defaultMaxPayloadBytes, true);
    const errand = await openFromFlags(flags);
    try {
      const result = await errand.enqueue(kind, payload, options);
      if (flags.json) {
        // The row as stored (defaults filled in); a worker may already have run it.
        const job = await errand.getJob(result.id);
        printJson({ ...(job ?? { id: result.id }), duplicate: result.duplicate, ...(result.replaced ? { replaced: true } : {}) });
      } else console.log(result.id);
      if (result.replaced) console.error(`replaced: the waiting job ${result.id} with dedupe key '${flags.dedupeKey}' now has this payload and options`);
      else if (result.duplicate) console.error(`duplicate: a job with dedupe key '${flags.dedupeKey}' already exists (id ${result.id}); nothing was enqueued`);
    } finally {
      await errand.close();
    }
  });
}

/** `--dedupe`: a mode's name, or a ttl in seconds. */
function parseDedupe(value: string): DedupeMode {
  const seconds = /^\d+(\.\d+)?$/.test(value) ? Number(value) : undefined;
  if (seconds === 0) throw new InvalidArgumentError("a ttl must be more than 0 seconds");
  const mode: DedupeMode = seconds === undefined ? (value as DedupeMode) : { ttlMs: seconds * 1000 };
  encodeDedupe(mode, "dedupe", true);
  return mode;
}

function parseJsonArg(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch (error) {
    throw new InvalidArgumentError(`not valid JSON (${(error as Error).message})`);
  }
}
