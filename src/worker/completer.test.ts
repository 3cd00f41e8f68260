import { describe, expect, it } from "vitest";
import type { Driver, Statement } from "../driver/types.js";
import { queriesFor } from "../sql/jobs.js";
import { Completer, isRowError, maxRowsPerWrite } from "./completer.js";
import type { ClaimedJob } from "./executor.js";

/** A driver that records each statement's id list and reports every row as written. */
function recordingDriver(): { driver: Driver; writes: { name: string; ids: string[] }[] } {
  const writes: { name: string; ids: string[] }[] = [];
  const driver = {
    async run<Row>(statement: Statement, params: readonly unknown[]) {
      const ids = params[0] as string[];
      writes.push({ name: statement.name, ids });
      return { rows: ids.map((id) => ({ id })) as Row[] };
    },
    transaction: () => Promise.reject(new Error("not used")),
    session: () => Promise.reject(new Error("not used")),
    listen: () => Promise.reject(new Error("not used")),
    close: async () => {},
  } satisfies Driver;
  return { driver, writes };
}

function job(id: number): ClaimedJob {
  return { id: String(id), kind: "k", payload: {}, attempt: 1, maxAttempts: 8, retry: null, runAt: new Date(0), createdAt: new Date(0) };
}

describe("Completer", () => {
  const queries = queriesFor("errand");

  it("splits a backlog into writes of at most maxRowsPerWrite rows, losing none", async () => {
    const { driver, writes } = recordingDriver();
    const completer = new Completer(driver, queries, "w1", 1_000, (error) => {
      throw error;
    });
    const total = maxRowsPerWrite * 2 + 500;
    for (let i = 1; i <= total; i++) completer.add(job(i), { type: "done" });
    await completer.flush();
    expect(writes.map((w) => w.ids.length)).toEqual([maxRowsPerWrite, maxRowsPerWrite, 500]);
    expect(writes.every((w) => w.name === queries.complete.name)).toBe(true);
    expect(new Set(writes.flatMap((w) => w.ids)).size).toBe(total);
    expect(completer.size).toBe(0);
  });

  it("writes each kind of outcome with its own statement", async () => {
    const { driver, writes } = recordingDriver();
    const completer = new Completer(driver, queries, "w1", 1_000, (error) => {
      throw error;
    });
    completer.add(job(1), { type: "done" });
    completer.add(job(2), { type: "failed", error: "boom", permanent: false, delayMs: 10 });
    completer.add(job(3), { type: "done" });
    completer.add(job(4), { type: "released" });
    await completer.flush();
    const byName = Object.fromEntries(writes.map((w) => [w.name, w.ids]));
    expect(byName[queries.complete.name]).toEqual(["1", "3"]);
    expect(byName[queries.fail.name]).toEqual(["2"]);
    expect(byName[queries.release.name]).toEqual(["4"]);
  });

  it("does not split or bury anything when the database cannot be reached: the batch is kept for a retry", async () => {
    const statements: string[] = [];
    const driver = {
      async run<Row>(statement: Statement): Promise<{ rows: Row[] }> {
        statements.push(statement.name);
        throw Object.assign(new Error("Connection terminated unexpectedly"), { code: "ECONNRESET" });
      },
      transaction: () => Promise.reject(new Error("not used")),
      session: () => Promise.reject(new Error("not used")),
      listen: () => Promise.reject(new Error("not used")),
      close: async () => {},
    } satisfies Driver;
    const completer = new Completer(driver, queries, "w1", 1_000, () => {});
    for (let i = 1; i <= 8; i++) completer.add(job(i), { type: "done" });
    await expect(completer.flush()).rejects.toThrow("Connection terminated");
    expect(statements).toEqual([queries.complete.name]);
    expect(completer.size).toBe(8);
  });

  it("tells row errors (SQLSTATE classes 22 and 23) from the rest", () => {
    expect(["22023", "22P02", "23502", "23514"].map((code) => isRowError({ code }))).toEqual([true, true, true, true]);
    expect(["08006", "57P01", "40P01", "ECONNRESET", undefined].map((code) => isRowError({ code }))).toEqual([false, false, false, false, false]);
  });
});
