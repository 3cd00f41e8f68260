import { describe, expect, it } from "vitest";
import { queriesFor } from "../../src/sql/jobs.js";
import { useTestErrand } from "../support/db.js";

// Migration 021: no index of jobs names a column that a plain claim, its start or its
// heartbeat changes, and pages keep room for the new versions, so PostgreSQL writes them in
// place (HOT): no new entry in any index. Counted inside the transaction that made them.
const t = useTestErrand();

interface Counts {
  updated: number;
  hot: number;
}


/** The updates of jobs the transaction on `tx` made so far, and how many of them were HOT. */
async function counts(tx: { query: <R>(text: string, params?: unknown[]) => Promise<{ rows: R[] }> }): Promise<Counts> {
  const { rows } = await tx.query<{ updated: string; hot: string }>(
    `SELECT pg_stat_get_xact_tuples_updated($1::regclass) AS updated, pg_stat_get_xact_tuples_hot_updated($1::regclass) AS hot`,
    [`${t.schema}.jobs`],
  );
  return { updated: Number(rows[0]!.updated), hot: Number(rows[0]!.hot) };
}

interface Claimed {
  id: string;
  attempts: number;
  started: boolean;
  lease: string;
}

describe("a plain claim", () => {
  it("is written in place (HOT), and records its batch's lease", async () => {
    await t.errand.enqueueMany(Array.from({ length: 100 }, (_, i) => ({ kind: "k", payload: { i } })));
    const q = queriesFor(t.schema);
    await t.inTransaction(async (tx) => {
      const { rows: claimed } = await tx.query<Claimed>(q.claim.text, [100, "w", "{}", 60_000, 10, "default", ["k"]]);
      expect(claimed).toHaveLength(100);
      expect(await counts(tx)).toEqual({ updated: 100, hot: 100 });
      const { rows: records } = await tx.query<{ id: string; worker: string; ids: string[] }>(`SELECT id::text, worker, ids::text[] FROM ${t.schema}.leases`);
      expect(records).toEqual([{ id: String(claimed[0]!.lease), worker: "w", ids: expect.arrayContaining(claimed.map((row) => String(row.id))) as unknown }]);
      expect(new Set(claimed.map((row) => String(row.lease))).size).toBe(1);
    }, false);
  });

  it("and what follows it on a running job change no column an index of jobs names", async () => {
    // PostgreSQL decides HOT by columns: one index naming a column a statement writes, as a
    // key, in an expression or in its predicate, and no update by it is HOT. (A second
    // update in the claim's own transaction would not fit the page: between transactions
    // PostgreSQL prunes the older versions as it goes, which this test cannot time.)
    const written = ["status", "attempts", "locked_by", "locked_until", "started_at", "progress", "checkpoint"];
    const rows = await t.sql<{ name: string; columns: string[]; predicate: string | null; expressions: string | null }>(
      `SELECT c.relname AS name,
              ARRAY(SELECT a.attname::text FROM unnest(i.indkey) k JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k) AS columns,
              pg_get_expr(i.indpred, i.indrelid) AS predicate, pg_get_expr(i.indexprs, i.indrelid) AS expressions
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = $1::regclass`,
      [`${t.schema}.jobs`],
    );
    expect(rows.length).toBeGreaterThan(5);
    const named = rows.flatMap(({ name, columns, predicate, expressions }) =>
      written.filter((column) => columns.includes(column) || new RegExp(`\\b${column}\\b`).test(`${predicate ?? ""} ${expressions ?? ""}`)).map((column) => `${name}: ${column}`),
    );
    expect(named).toEqual([]);
  });
});
