import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { inject } from "vitest";
import { Errand } from "../../src/index.js";
import { freshSchema, onPostgres } from "./db.js";
import { spawnErrand } from "./process.js";

/** The result of one CLI run. */
export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `errand ARGS` as a user would (the built binary) to its end; fails after `timeoutMs`. */
export async function errandCli(args: readonly string[], env: Readonly<Record<string, string>> = {}, timeoutMs = 60_000): Promise<CliResult> {
  const run = spawnErrand(`errand ${args.join(" ")}`, args, env);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    run.child.kill("SIGKILL");
  }, timeoutMs);
  const { code } = await run.exited;
  clearTimeout(timer);
  if (timedOut) throw new Error(`errand ${args.join(" ")} timed out after ${timeoutMs} ms\n${run.stdout()}\n${run.stderr()}`);
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

/** A database for CLI runs; see {@link cliDatabase}. */
export interface CliDatabase {
  /** The flags that point a CLI run at it. */
  readonly flags: string[];
  readonly schema: string;
  /** Opens errand on it in this process (while no CLI run holds an embedded database). */
  open(): Promise<Errand>;
  /** Drops the schema (PostgreSQL) or deletes the data directory (PGlite). */
  cleanup(): Promise<void>;
}

/**
 * Database flags for CLI tests: a fresh schema on the PostgreSQL server, or a fresh
 * embedded data directory (copied from the template) on PGlite.
 */
export function cliDatabase(): CliDatabase {
  const schema = freshSchema();
  if (onPostgres) {
    const url = process.env.ERRAND_TEST_URL!;
    return {
      flags: ["--database-url", url, "--schema", schema],
      schema,
      open: () => Errand.open({ connectionString: url, schema }),
      async cleanup() {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => client.end());
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), "errand-cli-"));
  const dataDir = join(dir, "data");
  cpSync(inject("pgliteTemplate"), dataDir, { recursive: true });
  return {
    flags: ["--data-dir", dataDir, "--schema", schema],
    schema,
    open: () => Errand.open({ dataDir, schema }),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}
