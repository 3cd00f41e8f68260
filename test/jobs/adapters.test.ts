import { PGlite } from "@electric-sql/pglite";
import { type SQL, sql } from "drizzle-orm";
import { drizzle as drizzleNodePg } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { describe, expect, it } from "vitest";
import { type DrizzleDatabase, type SqlClient, fromDrizzle } from "../../src/index.js";
import { target, useTestErrand } from "../support/db.js";

// Drizzle on the suite's own database: its PGlite driver on PGlite, its node-postgres
// driver on PostgreSQL (postgres.js and Kysely are covered in adapters.pg.test.ts).
const t = useTestErrand();

const rollback = new Error("roll back");

/** Runs `fn` in a Drizzle transaction on the test's database; commits, or rolls back by throwing. */
async function inDrizzleTransaction(fn: (db: SqlClient) => Promise<unknown>, commit: boolean): Promise<void> {
  const body = async (tx: DrizzleDatabase<SQL>) => {
    await fn(fromDrizzle(tx, sql));
    if (!commit) throw rollback;
  };
  const transaction = t.db instanceof PGlite ? drizzlePglite({ client: t.db }).transaction(body) : drizzleNodePg({ client: t.db }).transaction(body);
  await transaction.catch((error: unknown) => {
    if (error !== rollback) throw error;
  });
}

describe(`fromDrizzle on ${target}`, () => {
  it("commit keeps the job with its payload intact; rollback drops it", async () => {
    const payload = { note: `O'Brien said "hi" -- $1 \\ '`, list: [1, "two", null] };
    let kept = "";
    let dropped = "";
    await inDrizzleTransaction(async (db) => {
      kept = (await t.errand.enqueue("send_receipt", payload, { db })).id;
    }, true);
    await inDrizzleTransaction(async (db) => {
      dropped = (await t.errand.enqueue("send_receipt", { n: 2 }, { db })).id;
    }, false);
    expect(await t.errand.getJob(kept)).toMatchObject({ kind: "send_receipt", payload });
    expect(dropped).toMatch(/^\d+$/);
    expect(await t.errand.getJob(dropped)).toBeNull();
  });

  it("enqueueMany reports an existing dedupe key as a duplicate", async () => {
    const first = await t.errand.enqueue("k", 1, { dedupeKey: "key:'1'" });
    let results: unknown;
    await inDrizzleTransaction(async (db) => {
      results = await t.errand.enqueueMany(
        [
          { kind: "k", payload: 1, dedupeKey: "key:'1'" },
          { kind: "k", payload: 2, dedupeKey: "key:'2'" },
        ],
        { db },
      );
    }, true);
    expect(results).toEqual([
      { id: first.id, duplicate: true },
      { id: expect.stringMatching(/^\d+$/), duplicate: false },
    ]);
  });

  it("binds each $n as a parameter and leaves '$n' inside literals and comments alone", async () => {
    let rows: unknown[] = [];
    await inDrizzleTransaction(async (db) => {
      ({ rows } = await db.query(`SELECT $2::text AS s, $1::jsonb AS j, '$1' AS lit, $$ $2 $$ AS dollar -- $3`, [`{"a":"it's"}`, `say "$1"`]));
    }, true);
    expect(rows).toEqual([{ s: `say "$1"`, j: { a: "it's" }, lit: "$1", dollar: " $2 " }]);
  });
});
