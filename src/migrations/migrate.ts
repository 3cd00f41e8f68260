import { readFileSync, readdirSync } from "node:fs";
import type { Driver } from "../driver/types.js";
import { channelFor, qualified } from "../sql/schema.js";

/** One migration file: `NNN-name.sql`. */
interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

const folder = new URL("./", import.meta.url);

function loadMigrations(): Migration[] {
  return readdirSync(folder)
    .filter((file) => /^\d{3}-[a-z0-9-]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 3)),
      name: file.slice(4, -4),
      sql: readFileSync(new URL(file, folder), "utf8"),
    }));
}

/** The latest migration version this build knows. */
export function latestVersion(): number {
  return loadMigrations().at(-1)?.version ?? 0;
}

/**
 * Brings `schema` up to the latest version. Forward-only and idempotent: applied
 * versions are recorded in `<schema>.migrations`. Safe when several processes migrate at
 * once: a transaction-level advisory lock serialises them, and the late ones find
 * nothing left to do. Returns the versions it applied.
 */
export async function migrate(driver: Driver, schema: string): Promise<number[]> {
  const migrations = loadMigrations();
  const s = qualified(schema);
  return driver.transaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`errand.migrate:${schema}`]);
    await tx.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await tx.query(
      `CREATE TABLE IF NOT EXISTS ${s}.migrations (
         version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await tx.query<{ version: number }>(`SELECT version FROM ${s}.migrations`);
    const applied = new Set(rows.map((row) => Number(row.version)));
    const done: number[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      const sql = migration.sql.replaceAll("{{schema}}", s).replaceAll("{{channel}}", channelFor(schema));
      await tx.exec(sql);
      await tx.query(`INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
      done.push(migration.version);
    }
    return done;
  });
}
