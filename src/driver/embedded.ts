import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { defaultDataDir } from "../defaults.js";
import { ErrandError } from "../errors.js";
import type { Driver } from "./types.js";
import { pgliteDriver } from "./pglite.js";

/**
 * Opens (creating if needed) the embedded PGlite database in `dataDir`.
 *
 * PGlite is one connection for one process, and two processes on one data directory
 * corrupt it silently, so a lock file next to the data records the owner's pid; a second
 * process gets a clear error instead. A lock left by a dead process is taken over.
 */
export async function openEmbedded(dataDir: string = defaultDataDir): Promise<Driver> {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const lockFile = `${dir}.lock`;
  takeLock(lockFile, dir);
  try {
    const db = await PGlite.create(dir);
    return pgliteDriver(db, true, () => releaseLock(lockFile));
  } catch (error) {
    releaseLock(lockFile);
    throw new ErrandError("embedded_open_failed", `could not open the embedded database at ${dir}: ${(error as Error).message}`, { cause: error });
  }
}

function takeLock(lockFile: string, dir: string): void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, String(process.pid), { flag: "wx" });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number(readFileSync(lockFile, "utf8").trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new ErrandError(
          "embedded_locked",
          `the embedded database at ${dir} is in use by process ${owner}; the embedded database serves one process — ` +
            `run producer and worker in one process, or use a PostgreSQL server (--database-url / DATABASE_URL) for several`,
        );
      }
      rmSync(join(lockFile), { force: true }); // stale: its owner is gone
    }
  }
  throw new ErrandError("embedded_locked", `could not take the lock file ${lockFile}`);
}

function releaseLock(lockFile: string): void {
  try {
    if (readFileSync(lockFile, "utf8").trim() === String(process.pid)) rmSync(lockFile, { force: true });
  } catch {
    // already gone
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
