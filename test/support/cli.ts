import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { onPostgres } from "./db.js";

const bin = new URL("../../bin/errand.js", import.meta.url).pathname;

/** The result of one CLI run. */
export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `errand ARGS` as a user would (the built binary), with a timeout. */
export function errandCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, DATABASE_URL: "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`errand ${args.join(" ")} timed out after ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Database flags for CLI tests: a fresh schema on the PostgreSQL server, or a fresh
 * embedded data directory (copied from the template) on PGlite.
 */
export function cliDatabase(): { readonly flags: string[]; readonly schema: string; cleanup(): void } {
  const schema = `t_${randomBytes(6).toString("hex")}`;
  if (onPostgres) return { flags: ["--database-url", process.env.ERRAND_TEST_URL!, "--schema", schema], schema, cleanup: () => {} };
  const dir = mkdtempSync(join(tmpdir(), "errand-cli-"));
  cpSync(inject("pgliteTemplate"), join(dir, "data"), { recursive: true });
  return { flags: ["--data-dir", join(dir, "data"), "--schema", schema], schema, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
