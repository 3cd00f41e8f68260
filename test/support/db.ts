import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { PGlite } from "@electric-sql/pglite";
import { afterAll, afterEach, beforeEach, inject } from "vitest";
import { Errand, type ErrandOptions } from "../../src/index.js";
import type { SqlClient } from "../../src/client.js";
import { channelFor } from "../../src/sql/statement.js";

/** Which database this run of the suite targets. */
export const target = (process.env.ERRAND_TEST_DB ?? "pglite") as "postgres" | "pglite";
export const onPostgres = target === "postgres";

let pool: pg.Pool | undefined;
let lite: { db: PGlite; dir: string } | undefined;

/** One shared connection per test file; each test gets its own schema on it. */
async function shared(): Promise<pg.Pool | PGlite> {
  if (onPostgres) {
    pool ??= new pg.Pool({ connectionString: process.env.ERRAND_TEST_URL, max: 20 });
    return pool;
  }
  if (!lite) {
    const dir = mkdtempSync(join(tmpdir(), "errand-test-"));
    cpSync(inject("pgliteTemplate"), dir, { recursive: true });
    lite = { db: await PGlite.create(dir), dir };
  }
  return lite.db;
}

afterAll(async () => {
  await pool?.end();
  pool = undefined;
  if (lite) {
    await lite.db.close();
    rmSync(lite.dir, { recursive: true, force: true });
    lite = undefined;
  }
});

/** A test's own errand: a fresh schema, migrated, dropped by `cleanup()`. */
export interface TestErrand {
  readonly errand: Errand;
  readonly schema: string;
  /** Run SQL directly (test assertions, time travel). */
  sql<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<Row[]>;
  /** The raw shared connection (pg.Pool or PGlite). */
  readonly db: pg.Pool | PGlite;
  /** Runs `fn` inside a transaction on the caller's own connection, as an app would. */
  inTransaction<T>(fn: (client: SqlClient) => Promise<T>, commit?: boolean): Promise<T>;
  cleanup(): Promise<void>;
}

/**
 * Listens on the workers' channel as a waiting worker does: the insert trigger notifies only
 * while a row of the worker registry says a worker waits (migration 025), so this writes one.
 */
export async function listenAsWaitingWorker(t: Pick<TestErrand, "sql" | "schema" | "errand">, onNotify: (payload?: string) => void): Promise<() => Promise<void>> {
  await t.sql(`INSERT INTO ${t.schema}.workers (id, queues, kinds) VALUES ('a test listening', '{}', '{}')`);
  return await t.errand.driver.listen(channelFor(t.schema), onNotify);
}

/**
 * Listens on the workers' channel; `noticesOf(insert)` gives the notices sent by `insert`.
 * Each call ends with a sentinel notice, so a notice the insert did not send cannot arrive
 * later unseen (a worker listening takes the sentinel for an insert's notice).
 */
export async function listenForNotices(t: Pick<TestErrand, "sql" | "schema" | "errand">): Promise<{ noticesOf: (insert: () => Promise<unknown>) => Promise<string[]>; unlisten: () => Promise<void> }> {
  const payloads: string[] = [];
  const channel = channelFor(t.schema);
  const unlisten = await t.errand.driver.listen(channel, (payload) => payloads.push(payload ?? ""));
  let sentinels = 0;
  const noticesOf = async (insert: () => Promise<unknown>): Promise<string[]> => {
    const from = payloads.length;
    await insert();
    const sentinel = `sentinel ${++sentinels}`;
    await t.sql(`SELECT pg_notify('${channel}', '${sentinel}')`);
    await eventually(() => payloads.includes(sentinel), 5_000, sentinel);
    return payloads.slice(from, payloads.indexOf(sentinel));
  };
  return { noticesOf, unlisten };
}

/**
 * SQL time travel: the leases of the running jobs `ids` (all of them when omitted) ran out
 * `ago` ago, in the jobs and in the lease records the rescuer reads (migration 021); a job
 * that has none (written by plain SQL) gets one, as a worker that claimed it would have left.
 */
export async function expireLeases(t: Pick<TestErrand, "sql" | "schema">, ids?: readonly string[], ago = "1 minute"): Promise<void> {
  const expired = await t.sql<{ id: string }>(
    `UPDATE ${t.schema}.jobs SET locked_until = now() - interval '${ago}' WHERE status = 'running' AND ($1::bigint[] IS NULL OR id = ANY($1::bigint[])) RETURNING id`,
    [ids ?? null],
  );
  await t.sql(`INSERT INTO ${t.schema}.leases (worker, locked_until, ids) VALUES ('test', now() - interval '${ago}', $1::bigint[])`, [expired.map((row) => row.id)]);
}

/** A schema name no other test uses (`t_` and 12 hex digits). */
export function freshSchema(): string {
  return `t_${randomBytes(6).toString("hex")}`;
}

/** Opens errand in a fresh schema on this file's shared database; `cleanup()` drops it. */
export async function testErrand(options: Omit<ErrandOptions, "db" | "connectionString" | "dataDir" | "schema"> = {}): Promise<TestErrand> {
  const db = await shared();
  const schema = freshSchema();
  const errand = await Errand.open({ ...options, db, schema });
  const raw = db as unknown as SqlClient;
  const sql = async <Row>(text: string, params?: unknown[]) => (await raw.query(text, params)).rows as Row[];
  return {
    errand,
    schema,
    db,
    sql,
    async inTransaction(fn, commit = true) {
      if (db instanceof PGlite) {
        let result: Awaited<ReturnType<typeof fn>> | undefined;
        const rollback = new Error("rollback");
        await db
          .transaction(async (tx) => {
            result = await fn(tx);
            if (!commit) throw rollback;
          })
          .catch((error: unknown) => {
            if (error !== rollback) throw error;
          });
        return result as Awaited<ReturnType<typeof fn>>;
      }
      const client = await db.connect();
      try {
        await client.query("BEGIN");
        const result = await fn(client);
        await client.query(commit ? "COMMIT" : "ROLLBACK");
        return result;
      } catch (error) {
        await client.query("ROLLBACK");
        throw error;
      } finally {
        client.release();
      }
    },
    async cleanup() {
      await errand.close();
      // A worker process a test killed may have left its backend finishing a statement here:
      // the drop can deadlock with it, and PostgreSQL cancels one side. Once more, then.
      for (let attempt = 1; ; attempt++) {
        try {
          await raw.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          return;
        } catch (error) {
          if ((error as { code?: string }).code !== "40P01" || attempt === 3) throw error;
        }
      }
    },
  };
}

/**
 * The setup most test files share: each test gets its own {@link testErrand} (a fresh
 * schema, migrated), cleaned up after it. Call at the top of a file or `describe`; the
 * returned handle reads the current test's.
 */
export function useTestErrand(options: Parameters<typeof testErrand>[0] = {}): TestErrand {
  let current: TestErrand | undefined;
  beforeEach(async () => {
    current = await testErrand(options);
  });
  afterEach(async () => {
    await current?.cleanup();
    current = undefined;
  });
  return new Proxy({} as TestErrand, {
    get(_, key) {
      if (!current) throw new Error("useTestErrand(): its errand exists only while a test runs");
      const value: unknown = Reflect.get(current, key);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(current) : value;
    },
  });
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes. */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 10_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await check();
    if (last) return last;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last value: ${JSON.stringify(last)})`);
}
