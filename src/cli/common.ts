import { Command, InvalidArgumentError, Option } from "commander";
import { Errand, type ErrandOptions } from "../client.js";
import { defaultDataDir, defaultSchema } from "../defaults.js";
import { ValidationError } from "../errors.js";
import { integerIn, nonNegativeMs, positiveMs } from "../validate.js";

/** Options every command that touches the database accepts. */
export interface DatabaseFlags {
  readonly databaseUrl?: string;
  readonly dataDir?: string;
  readonly schema?: string;
}

/** Adds `--database-url`, `--data-dir` and `--schema` to a command. */
export function withDatabase(command: Command): Command {
  return command
    .addOption(new Option("--database-url <url>", "PostgreSQL URL (default $DATABASE_URL, else the embedded database)").env("DATABASE_URL"))
    .option("--data-dir <dir>", `folder of the embedded database (default ${defaultDataDir})`)
    .option("--schema <name>", `schema holding errand's tables (default ${defaultSchema})`);
}

/** Every client the command opened, for {@link closeOpened}. */
const opened: Errand[] = [];

/** Opens errand as the flags say: a server when a URL is given, else the embedded database. */
export async function openFromFlags(flags: DatabaseFlags, extra: Omit<ErrandOptions, "connectionString" | "dataDir" | "schema"> = {}): Promise<Errand> {
  if (flags.databaseUrl && flags.dataDir) throw new InvalidArgumentError("give --database-url or --data-dir, not both");
  const errand = await Errand.open({
    ...extra,
    ...(flags.databaseUrl ? { connectionString: flags.databaseUrl } : {}),
    ...(flags.dataDir ? { dataDir: flags.dataDir } : {}),
    ...(flags.schema ? { schema: flags.schema } : {}),
  });
  opened.push(errand);
  return errand;
}

/**
 * Closes what a failed command left open. An open pool keeps the process alive until
 * its idle connections time out (10 s), so without this a command that fails after
 * connecting printed its error at once but exited only 10 s later.
 */
export async function closeOpened(): Promise<void> {
  // Closing is idempotent: clients the command closed itself are not closed again.
  await Promise.allSettled(opened.map((errand) => errand.close()));
}

/**
 * Adapts a check from src/validate.ts to a commander argument parser: its message
 * (without the field name: commander names the flag) becomes commander's.
 */
export function cliArg<T>(parse: (value: string) => T): (value: string) => T {
  return (value) => {
    try {
      return parse(value);
    } catch (error) {
      if (error instanceof ValidationError) throw new InvalidArgumentError(error.message.slice(error.field.length + 2));
      throw error;
    }
  };
}

/** Parses a whole number within bounds, for commander. */
export function intArg(min: number, max = Number.MAX_SAFE_INTEGER) {
  return cliArg((value: string): number => {
    if (!/^\s*-?\d+\s*$/.test(value)) throw new InvalidArgumentError("must be a whole number");
    return integerIn(Number(value), "value", min, max);
  });
}

/** Parses a number of seconds (≥ 0, or > 0 without `allowZero`) into milliseconds, for commander. */
export function secondsArg(allowZero = true) {
  return cliArg((value: string): number => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n)) throw new InvalidArgumentError("must be a number of seconds");
    if (n < 0 || (!allowZero && n === 0)) throw new InvalidArgumentError(allowZero ? "must be ≥ 0 seconds" : "must be > 0 seconds");
    const ms = Math.round(n * 1000);
    return allowZero ? nonNegativeMs(ms, "value") : positiveMs(ms, "value");
  });
}

/** Milliseconds as the CLI's help shows seconds: `25`, `0.05`. */
export function inSeconds(ms: number): string {
  return String(ms / 1000);
}

/** Prints one JSON line (machine-readable logs). */
export function logLine(record: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...record })}\n`);
}
