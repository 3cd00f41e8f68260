import { resolve } from "node:path";
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

/**
 * Adds `--database-url`, `--data-dir` and `--schema` to a command. With `embeddedByDefault`
 * false (see {@link requireDatabase}) the help says the database must be named.
 */
export function withDatabase(command: Command, { embeddedByDefault = true } = {}): Command {
  return command
    .addOption(
      new Option("--database-url <url>", embeddedByDefault ? "PostgreSQL URL (default $DATABASE_URL, else the embedded database)" : "PostgreSQL URL (default $DATABASE_URL; this, $DATABASE_URL or --data-dir is required)").env(
        "DATABASE_URL",
      ),
    )
    .option("--data-dir <dir>", embeddedByDefault ? `folder of the embedded database (default ${defaultDataDir})` : `use the embedded database in this folder, e.g. ${defaultDataDir}`)
    .option("--schema <name>", `schema holding errand's tables (default ${defaultSchema})`);
}

/**
 * Refuses to fall back to the embedded database, for commands that run apart from the
 * application: a worker started without its `DATABASE_URL` would otherwise sit idle on an
 * empty database of its own and look healthy. An empty `DATABASE_URL` counts as unset.
 */
export function requireDatabase(flags: DatabaseFlags, command: string): void {
  if (flags.databaseUrl && flags.dataDir) throw new InvalidArgumentError("give --database-url (or DATABASE_URL) or --data-dir, not both");
  if (flags.databaseUrl || flags.dataDir) return;
  throw new InvalidArgumentError(
    `${command} needs a database: set DATABASE_URL or give --database-url URL for PostgreSQL, or --data-dir DIR to use the embedded database ` +
      `(it serves one process at a time: run apart from the application, this command sees only the jobs enqueued before it started)`,
  );
}

/**
 * The database the flags point at, for a command's first line: a URL as
 * `postgres://host:port/db` (no user, password or parameters), or
 * `embedded (PGlite) at /absolute/folder`.
 */
export function databaseLabel(flags: DatabaseFlags): string {
  if (!flags.databaseUrl) return `embedded (PGlite) at ${resolve(flags.dataDir ?? defaultDataDir)}`;
  let url: URL;
  try {
    url = new URL(flags.databaseUrl);
  } catch {
    // Unparsable here; the connection fails with its own message. Show no part that may be a secret.
    return flags.databaseUrl.replace(/^(.*\/\/)?[^/]*@/, "$1").replace(/[?#].*$/, "");
  }
  const host = url.hostname || url.searchParams.get("host") || "localhost";
  return `${url.protocol}//${host}:${url.port || "5432"}${url.pathname || "/"}`;
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
