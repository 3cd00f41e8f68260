import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { useTestErrand } from "../support/db.js";

// Migration 020: outcome, key_running and key_started_at mirror a job's state for the
// indexes that select by it. Whoever writes the row — errand's statements, plain SQL, a
// hand edit that sets the mirrors themselves — they must read as the state says.
const t = useTestErrand();

/** Rows of jobs whose mirrors differ from what their status, concurrency key and start say. */
async function stale(): Promise<unknown[]> {
  return t.sql(
    `SELECT id, status, concurrency_key, started_at, outcome, key_running, key_started_at FROM ${t.schema}.jobs
     WHERE outcome IS DISTINCT FROM (CASE WHEN status IN ('done', 'dead', 'cancelled') THEN status END)
        OR key_running IS DISTINCT FROM (CASE WHEN status = 'running' THEN concurrency_key END)
        OR key_started_at IS DISTINCT FROM (CASE WHEN concurrency_key IS NOT NULL THEN started_at END)`,
  );
}

const statuses = ["ready", "running", "done", "dead", "cancelled"] as const;
const status = fc.constantFrom(...statuses);
const key = fc.constantFrom(null, "tenant:1", "tenant:2");
const started = fc.constantFrom(null, "2026-01-01T00:00:00Z", "now");
const at = (value: string | null) => (value === "now" ? "now()" : value === null ? "NULL" : `'${value}'::timestamptz`);
const literal = (value: string | null) => (value === null ? "NULL" : `'${value}'`);

/** A write by plain SQL to one of the jobs inserted first (by index), or a new row. */
const write = fc.oneof(
  fc.record({ op: fc.constant("insert" as const), status, key, started, outcome: fc.constantFrom(null, "done", "bogus") }),
  fc.record({ op: fc.constant("status" as const), row: fc.nat(3), status }),
  fc.record({ op: fc.constant("key" as const), row: fc.nat(3), key }),
  fc.record({ op: fc.constant("started" as const), row: fc.nat(3), started }),
  fc.record({ op: fc.constant("mirrors" as const), row: fc.nat(3), outcome: fc.constantFrom(null, "dead"), key }),
);

describe("the state mirrors (migration 020)", () => {
  it("follow every write of plain SQL, including one that sets them by hand", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 12 }), async (writes) => {
        await t.sql(`DELETE FROM ${t.schema}.jobs`);
        const rows = await t.sql<{ id: string }>(
          `INSERT INTO ${t.schema}.jobs (kind, payload, concurrency_key) SELECT 'k', '{}', CASE WHEN g % 2 = 0 THEN 'tenant:1' END
           FROM generate_series(1, 4) g RETURNING id`,
        );
        const id = (row: number) => rows[row]!.id;
        for (const w of writes) {
          const running = (s: string) => (s === "running" ? ", locked_until = now() + interval '1 minute'" : ", locked_until = NULL");
          if (w.op === "insert") {
            await t.sql(
              `INSERT INTO ${t.schema}.jobs (kind, payload, status, concurrency_key, started_at, outcome, locked_until)
               VALUES ('k', '{}', '${w.status}', ${literal(w.key)}, ${at(w.started)}, ${literal(w.outcome)}, ${w.status === "running" ? "now()" : "NULL"})`,
            );
          } else if (w.op === "status") {
            await t.sql(`UPDATE ${t.schema}.jobs SET status = '${w.status}'${running(w.status)} WHERE id = $1`, [id(w.row)]);
          } else if (w.op === "key") {
            await t.sql(`UPDATE ${t.schema}.jobs SET concurrency_key = ${literal(w.key)} WHERE id = $1`, [id(w.row)]);
          } else if (w.op === "started") {
            await t.sql(`UPDATE ${t.schema}.jobs SET started_at = ${at(w.started)} WHERE id = $1`, [id(w.row)]);
          } else {
            await t.sql(`UPDATE ${t.schema}.jobs SET outcome = ${literal(w.outcome)}, key_running = ${literal(w.key)} WHERE id = $1`, [id(w.row)]);
          }
        }
        expect(await stale()).toEqual([]);
      }),
      { numRuns: 40 },
    );
  });

  it("follow errand's own statements: claims, completions, failures, cancels and retries of dead letters", async () => {
    await t.errand.enqueueMany([
      { kind: "ok", payload: {}, concurrencyKey: "tenant:1" },
      { kind: "ok", payload: {}, dedupeKey: "once" },
      { kind: "ok", payload: {} },
      { kind: "boom", payload: {}, concurrencyKey: "tenant:2", maxAttempts: 1 },
      { kind: "boom", payload: {}, maxAttempts: 1 },
    ]);
    const waiting = await t.errand.enqueue("later", {}, { concurrencyKey: "tenant:1", runAt: new Date(Date.now() + 3_600_000) });
    const worker = t.errand.worker({
      handlers: {
        ok: async () => {},
        boom: async () => {
          throw new Error("boom");
        },
      },
    });
    while ((await worker.runOnce()) > 0);
    await t.errand.cancel({ ids: [waiting.id] });
    const states = await t.sql<{ outcome: string | null; n: string }>(
      `SELECT outcome, count(*)::text AS n FROM ${t.schema}.jobs GROUP BY outcome ORDER BY outcome`,
    );
    // The unkeyed job moved to done_jobs; the keyed and the deduped one stay, done.
    expect(states).toEqual([
      { outcome: "cancelled", n: "1" },
      { outcome: "dead", n: "2" },
      { outcome: "done", n: "2" },
    ]);
    expect(await stale()).toEqual([]);
    expect(await t.errand.dead.retry({ kind: "boom" })).toHaveLength(2);
    expect(await t.sql(`SELECT id FROM ${t.schema}.jobs WHERE outcome IS NOT NULL AND status = 'ready'`)).toEqual([]);
    expect(await stale()).toEqual([]);
  });
});
