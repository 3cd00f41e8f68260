// The raw-SQL ceiling measured by PostgreSQL's own `pgbench`: the seed article's table and
// claim statement (LIMIT 100 instead of 1), then its success statement for the claimed ids,
// each statement committing on its own, from C with no library and no handler in between.
// 1 client for process_default, 4 for process_best. Same table shape as bench/systems/raw.js.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pgUrl, withPg } from "./common.js";

/** Rows per claim. */
export const batch = 100;

/** pgbench: BENCH_PGBENCH, else on PATH, else the newest /usr/lib/postgresql/<v>/bin/pgbench. */
function pgbenchPath() {
  if (process.env.BENCH_PGBENCH) return process.env.BENCH_PGBENCH;
  for (const dir of (process.env.PATH ?? "").split(":")) if (dir && existsSync(join(dir, "pgbench"))) return join(dir, "pgbench");
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(join(root, v, "bin", "pgbench"))) return join(root, v, "bin", "pgbench");
  return null;
}

/**
 * The pgbench script: one transaction of the script = one claim of up to 100 jobs (the
 * seed's statement: due ready jobs or expired leases, oldest first, SKIP LOCKED) and one
 * completion of the claimed ids. The claimed rows (id, kind, payload, attempts) are
 * returned to pgbench as one aggregated row, which `\gset` needs.
 */
export function script(table) {
  return `WITH claimed AS (
  UPDATE ${table}
  SET status = 'running', attempts = attempts + 1, locked_until = now() + interval '5 minutes'
  WHERE id IN (
    SELECT id FROM ${table}
    WHERE attempts < max_attempts
      AND ((status = 'ready' AND run_at <= now()) OR (status = 'running' AND locked_until < now()))
    ORDER BY run_at
    LIMIT ${batch}
    FOR UPDATE SKIP LOCKED
  )
  RETURNING id, kind, payload, attempts
)
SELECT coalesce(array_agg(id), '{}') AS ids, json_agg(json_build_array(kind, payload, attempts)) AS claimed FROM claimed \\gset
UPDATE ${table} SET status = 'done', locked_until = NULL WHERE id = ANY(:ids::bigint[]);
`;
}

/**
 * Runs pgbench over the `count` ready jobs in `"${ns}".jobs` with `clients` connections
 * (prepared statements) until they are done; returns jobs/s (pgbench's own clock, without
 * connection time) and the jobs done.
 */
export async function runPgbench(ns, { count, clients }) {
  const bin = pgbenchPath();
  if (!bin) {
    const error = new Error("pgbench not found (install PostgreSQL's client tools, or set BENCH_PGBENCH)");
    error.missingTool = true;
    throw error;
  }
  const dir = mkdtempSync(join(tmpdir(), "errand-pgbench-"));
  try {
    const file = join(dir, "claim-complete.sql");
    writeFileSync(file, script(`"${ns}".jobs`));
    const transactions = Math.ceil(count / batch / clients);
    const args = ["-n", "-M", "prepared", "-f", file, "-c", String(clients), "-j", String(clients), "-t", String(transactions), pgUrl];
    const out = await new Promise((resolve, reject) =>
      execFile(bin, args, { maxBuffer: 1 << 20 }, (error, stdout, stderr) => (error ? reject(new Error(`pgbench failed: ${stderr || error.message}`)) : resolve(stdout))),
    );
    const tps = Number(/tps = ([\d.]+)/.exec(out)?.[1]);
    const processed = Number(/number of transactions actually processed: (\d+)/.exec(out)?.[1]);
    if (!(tps > 0) || !(processed > 0)) throw new Error(`pgbench: cannot read its output:\n${out}`);
    const done = await withPg(async (c) => Number((await c.query(`SELECT count(*) FROM "${ns}".jobs WHERE status = 'done'`)).rows[0].count));
    if (done !== count) throw new Error(`pgbench: ${done} of ${count} jobs done`);
    // Seconds pgbench spent = processed / tps; every job of the table was done in them.
    return { value: done / (processed / tps), handled: done, transactions: processed, tps };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
