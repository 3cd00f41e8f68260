import { setTimeout as sleep } from "node:timers/promises";
import { ErrandError } from "../errors.js";
import type { Driver, Session } from "../driver/types.js";
import { channelFor, qualified } from "../sql/statement.js";
import { migrations as shipped } from "./index.js";
import type { Migration } from "./migration.js";
import { finishOnline, shortTransaction } from "./online.js";

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

// How often a second migrator asks for the lock the first one holds. It asks with a
// statement that returns at once rather than one that waits: a waiting statement holds a
// snapshot, and CREATE INDEX CONCURRENTLY in the first would wait for it (a deadlock).
const lockPollMs = 50;

/**
 * Brings `schema` up to the latest version while workers and enqueues go on. Forward-only
 * and idempotent: applied versions are recorded in `<schema>.migrations`. Each pending
 * migration's `sql` runs in its own transaction, which records it; then the indexes and
 * constraint checks that read the whole table are done without blocking writes (see
 * {@link Migration}), and a run interrupted before they finished has them finished by the
 * next one. Safe when several processes migrate at once: a session-level advisory lock
 * serialises them, and the late ones find nothing left to do. Returns the versions it
 * applied. `list` is the migrations to bring it to: every shipped one, or the first n of
 * them (a test that upgrades an old installation). `attempts`: how many times a step that
 * cannot take its locks tries before it gives up (see shortTransaction; a test passes fewer).
 */
export async function migrate(driver: Driver, schema: string, list: readonly Migration[] = shipped, attempts?: number): Promise<number[]> {
  const migrations = checkMigrations(list);
  const s = qualified(schema);
  const key = `errand.migrate:${schema}`;
  return driver.session(async (session) => {
    while (!(await session.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS locked", [key])).rows[0]?.locked) {
      await sleep(lockPollMs);
    }
    try {
      await session.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      await session.query(
        `CREATE TABLE IF NOT EXISTS ${s}.migrations (
           version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const { rows } = await session.query<{ version: number }>(`SELECT version FROM ${s}.migrations`);
      const applied = new Set(rows.map((row) => Number(row.version)));
      const pending = migrations.filter((migration) => !applied.has(migration.version));
      // A fresh install takes them all in one transaction: its tables are new and empty, so
      // holding their locks a little longer stops nobody, and a commit per migration costs more.
      for (const group of applied.size === 0 ? [pending] : pending.map((migration) => [migration])) {
        if (group.length > 0) await apply(session, schema, group, attempts);
      }
      await finishOnline(session, schema, migrations, attempts);
      return pending.map((migration) => migration.version);
    } finally {
      await session.query("SELECT pg_advisory_unlock(hashtext($1))", [key]);
    }
  });
}

/** Runs `group`'s migrations and records them, in one transaction that waits for no lock for long. */
async function apply(session: Session, schema: string, group: readonly Migration[], attempts: number | undefined): Promise<void> {
  const s = qualified(schema);
  const names = group.map((migration) => `${migration.version} (${migration.name})`).join(", ");
  await shortTransaction(session, `migration ${names} of schema ${schema}`, async (tx) => {
    for (const migration of group) {
      await tx.exec(migration.sql.replaceAll("{{schema}}", s).replaceAll("{{channel}}", channelFor(schema)));
      await tx.query(`INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
    }
  }, attempts);
}
