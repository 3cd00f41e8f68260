import { ErrandError } from "../errors.js";
import type { Driver } from "../driver/types.js";
import { channelFor, qualified } from "../sql/statement.js";
import { migrations as shipped } from "./index.js";
import type { Migration } from "./migration.js";

/**
 * `list` as the migrator may apply it: not empty, versions 1, 2, 3, … in order. An empty
 * list means a broken build or bundle, and migrating "successfully" with it would only
 * move the failure to the first query ("relation … does not exist"), so it fails here.
 */
export function checkMigrations(list: readonly Migration[]): readonly Migration[] {
  if (list.length === 0) {
    throw new ErrandError("invalid_migrations", "errand found no migrations to apply: this build of errand is broken (its migrations list is empty)");
  }
  list.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new ErrandError(
        "invalid_migrations",
        `errand's migrations are out of order: expected version ${index + 1} at position ${index + 1}, found ${migration.version} (${migration.name})`,
      );
    }
  });
  return list;
}

/** The latest migration version this build knows. */
export function latestVersion(): number {
  return checkMigrations(shipped).length;
}

/**
 * Brings `schema` up to the latest version. Forward-only and idempotent: applied
 * versions are recorded in `<schema>.migrations`. Safe when several processes migrate at
 * once: a transaction-level advisory lock serialises them, and the late ones find
 * nothing left to do. Returns the versions it applied.
 */
export async function migrate(driver: Driver, schema: string): Promise<number[]> {
  const migrations = checkMigrations(shipped);
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
