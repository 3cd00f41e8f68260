import { Command, InvalidArgumentError, Option } from "commander";
import { Errand, type ErrandOptions } from "../client.js";

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
    .option("--data-dir <dir>", "folder of the embedded database (default .errand/data)")
    .option("--schema <name>", "schema holding errand's tables (default errand)");
}

/** Opens errand as the flags say: a server when a URL is given, else the embedded database. */
export function openFromFlags(flags: DatabaseFlags, extra: Omit<ErrandOptions, "connectionString" | "dataDir" | "schema"> = {}): Promise<Errand> {
  if (flags.databaseUrl && flags.dataDir) throw new InvalidArgumentError("give --database-url or --data-dir, not both");
  return Errand.open({
    ...extra,
    ...(flags.databaseUrl ? { connectionString: flags.databaseUrl } : {}),
    ...(flags.dataDir ? { dataDir: flags.dataDir } : {}),
    ...(flags.schema ? { schema: flags.schema } : {}),
  });
}

/** Parses a whole number within bounds, for commander. */
export function intArg(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`must be a whole number`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`must be from ${min} to ${max}`);
    return n;
  };
}

/** Parses a non-negative number of seconds into milliseconds, for commander. */
export function secondsArg(allowZero = true) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n)) throw new InvalidArgumentError("must be a number of seconds");
    if (n < 0 || (!allowZero && n === 0)) throw new InvalidArgumentError(allowZero ? "must be ≥ 0 seconds" : "must be > 0 seconds");
    return Math.round(n * 1000);
  };
}

/** Prints one JSON line (machine-readable logs). */
export function logLine(record: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...record })}\n`);
}
