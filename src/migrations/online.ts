import { setTimeout as sleep } from "node:timers/promises";
import { ErrandError } from "../errors.js";
import type { Session, Transaction } from "../driver/types.js";
import { qualified } from "../sql/statement.js";
import type { Backfill, IndexBuild, Migration } from "./migration.js";

// A migration's transaction waits at most this long for a table's lock. While it waits,
// every enqueue and claim that arrives after it queues behind it, so a long wait (behind
// someone's long transaction) would stop the queue as surely as a long migration.
const lockTimeoutMs = 200;
// Then it rolls back, lets the queue move, and tries again, this many times in all (a
// test of the give-up passes fewer: 25 tries wait about 65 s).
const lockAttempts = 25;
// A table smaller than this (about 50,000 jobs) gets its index built inside a short
// transaction, in milliseconds. CREATE INDEX CONCURRENTLY would not block its writes
// either, but it waits for every older transaction in the whole database to end: a fresh
// install would wait for someone's hour-long report.
const smallTableBytes = 8 * 1024 * 1024;

/**
 * Runs `fn` in a transaction on `session` that waits at most 200 ms for any lock; when it
 * times out, it rolls back, waits a little longer each time and tries again (`attempts`
 * times in all). `what` names the work in the error that says it gave up.
 */
export async function shortTransaction(session: Session, what: string, fn: (tx: Transaction) => Promise<void>, attempts = lockAttempts): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await session.transaction(async (tx) => {
        await tx.query(`SET LOCAL lock_timeout = '${lockTimeoutMs}ms'`);
        await fn(tx);
      });
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== "55P03") throw error;
      if (attempt >= attempts) {
        throw new ErrandError(
          "migration_lock_timeout",
          `${what} could not take a lock within ${lockTimeoutMs} ms, ${attempts} times: a long transaction holds one of its tables ` +
            `(see pg_stat_activity); nothing of it was applied — run the migration again when that transaction has ended`,
          { cause: error },
        );
      }
      await sleep(lockTimeoutMs * attempt);
    }
  }
}

/**
 * Finishes what `migrations` declare to be done outside their transactions (see
 * {@link Migration}), once their `sql` is applied: builds the indexes of the latest schema
 * that are missing, drops the retired ones, then validates the constraints still NOT VALID. Each step reads the catalog first, so a run finds only what an interrupted one
 * left: nothing, in an installation already up to date. `attempts`: as {@link shortTransaction}'s.
 */
export async function finishOnline(session: Session, schema: string, migrations: readonly Migration[], attempts = lockAttempts): Promise<void> {
  const s = qualified(schema);
  const { wanted, retired } = indexesOf(migrations);
  const { rows } = await session.query<{ name: string; table: string; valid: boolean }>(
    `SELECT c.relname AS name, t.relname AS table, i.indisvalid AND i.indisready AS valid
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1`,
    [schema],
  );
  const existing = new Map(rows.map((row) => [row.name, row]));
  // Index work on small tables runs together in one short transaction; on big ones each
  // statement runs on its own, CONCURRENTLY. Builds come before drops: claims always have an
  // index. Backfills come between: the rows they write are indexed once, and a run cut short
  // before the drops does them again (see Migration.backfill).
  const small = new Map<string, boolean>();
  const step = () => ({ together: [] as string[], alone: [] as string[] });
  const [builds, drops] = [step(), step()];
  const plan = async (work: typeof builds, table: string, statement: (mode: string) => string) => {
    if (!small.has(table)) small.set(table, await isSmall(session, schema, table));
    if (small.get(table)) work.together.push(statement(""));
    else work.alone.push(statement(" CONCURRENTLY"));
  };
  const run = async (work: typeof builds) => {
    if (work.together.length > 0) {
      await shortTransaction(session, `the indexes of schema ${schema}`, async (tx) => {
        for (const statement of work.together) await tx.query(statement);
      }, attempts);
    }
    for (const statement of work.alone) await session.query(statement);
  };
  for (const index of wanted) {
    const valid = existing.get(index.name)?.valid;
    if (valid) continue;
    // valid === false: left by a build that was interrupted. No query reads it, but every
    // write still updates it, and IF NOT EXISTS would take it for done.
    if (valid === false) await plan(builds, index.table, (mode) => `DROP INDEX${mode} ${s}.${index.name}`);
    await plan(builds, index.table, (mode) => `CREATE INDEX${mode} ${index.name} ON ${s}.${index.table} ${index.columns}`);
  }
  for (const name of retired) {
    const table = existing.get(name)?.table;
    if (table !== undefined) await plan(drops, table, (mode) => `DROP INDEX${mode} IF EXISTS ${s}.${name}`);
  }
  await run(builds);
  for (const migration of migrations) {
    if (migration.backfill && (migration.retires ?? []).some((name) => existing.has(name))) await backfill(session, s, migration.backfill);
  }
  await run(drops);
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
}

// Rows per backfill statement: a short write, so its row locks hold up a worker only briefly.
const backfillBatch = 5_000;

/** Runs `fill` over its table in batches of consecutive ids, each a statement of its own. */
async function backfill(session: Session, s: string, fill: Backfill): Promise<void> {
  const table = `${s}.${fill.table}`;
  for (let after = "-9223372036854775808"; ; ) {
    const { rows } = await session.query<{ last: string | null }>(
      `WITH span AS (SELECT max(id) AS last FROM (SELECT id FROM ${table} WHERE id > $1::bigint ORDER BY id LIMIT ${backfillBatch}) b),
            filled AS (UPDATE ${table} j SET ${fill.set} FROM span WHERE j.id > $1::bigint AND j.id <= span.last AND (${fill.where}) RETURNING 1)
       SELECT last::text AS last FROM span`,
      [after],
    );
    const last = rows[0]?.last;
    if (last === null || last === undefined) return;
    after = last;
  }
}

async function isSmall(session: Session, schema: string, table: string): Promise<boolean> {
  const { rows } = await session.query<{ bytes: string }>("SELECT pg_relation_size(format('%I.%I', $1::text, $2::text)) AS bytes", [schema, table]);
  return Number(rows[0]!.bytes) < smallTableBytes;
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
