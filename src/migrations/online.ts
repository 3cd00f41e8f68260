import type { Session } from "../driver/types.js";
import { qualified } from "../sql/statement.js";
import type { IndexBuild, Migration } from "./migration.js";

/**
 * Finishes what `migrations` declare to be done outside their transactions (see
 * {@link Migration}), once their `sql` is applied: builds the indexes of the latest schema
 * that are missing, validates the constraints still NOT VALID, then drops the retired
 * indexes. Each step reads the catalog first, so a run finds only what an interrupted one
 * left: nothing, in an installation already up to date.
 */
export async function finishOnline(session: Session, schema: string, migrations: readonly Migration[]): Promise<void> {
  const s = qualified(schema);
  const { wanted, retired } = indexesOf(migrations);
  const { rows } = await session.query<{ name: string; valid: boolean }>(
    `SELECT c.relname AS name, i.indisvalid AND i.indisready AS valid
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1`,
    [schema],
  );
  const existing = new Map(rows.map((row) => [row.name, row.valid]));
  for (const index of wanted) {
    const valid = existing.get(index.name);
    if (valid) continue;
    // Left by a build that was interrupted: no query reads it, but every write still
    // updates it, and IF NOT EXISTS would take it for done.
    if (valid === false) await session.query(`DROP INDEX CONCURRENTLY ${s}.${index.name}`);
    await session.query(`CREATE INDEX CONCURRENTLY ${index.name} ON ${index.on.replaceAll("{{schema}}", s)}`);
  }
  const checks = migrations.flatMap((migration) => migration.validates ?? []);
  if (checks.length > 0) {
    const { rows: unchecked } = await session.query<{ constraint: string; table: string }>(
      `SELECT c.conname AS constraint, t.relname AS table
       FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = c.connamespace
       WHERE n.nspname = $1 AND NOT c.convalidated AND c.conname = ANY($2)`,
      [schema, checks],
    );
    for (const { constraint, table } of unchecked) await session.query(`ALTER TABLE ${s}.${table} VALIDATE CONSTRAINT ${constraint}`);
  }
  for (const name of retired) {
    if (existing.has(name)) await session.query(`DROP INDEX CONCURRENTLY IF EXISTS ${s}.${name}`);
  }
}

/** The indexes the latest of `migrations` has (in the order declared), and those retired on the way. */
function indexesOf(migrations: readonly Migration[]): { wanted: IndexBuild[]; retired: string[] } {
  const wanted = new Map<string, IndexBuild>();
  const retired = new Set<string>();
  for (const migration of migrations) {
    for (const index of migration.indexes ?? []) {
      wanted.set(index.name, index);
      retired.delete(index.name);
    }
    for (const name of migration.retires ?? []) {
      wanted.delete(name);
      retired.add(name);
    }
  }
  return { wanted: [...wanted.values()], retired: [...retired] };
}
