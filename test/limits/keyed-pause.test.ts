import { expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import type { Driver, Statement } from "../../src/driver/types.js";
import { eventually, useTestErrand } from "../support/db.js";

const t = useTestErrand();

it("a keyed job claimed just as a pause lands is given back unspent, not started", async () => {
  // The keyed claim's answer (one job, started by claim_keyed) is held until the pause is
  // committed and this worker has read it: the job arrives at a worker that knows it is paused.
  let releaseClaim!: () => void;
  const claimHeld = new Promise<void>((resolve) => (releaseClaim = resolve));
  let claimAnswered!: () => void;
  const claimDone = new Promise<void>((resolve) => (claimAnswered = resolve));
  let pauseCommitted = false;
  const driver: Driver = {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      const result = await t.errand.driver.run<Row>(statement, params);
      if (statement.text.includes(".claim_keyed(") && result.rows.some((row) => (row as { id: unknown }).id !== null)) {
        claimAnswered();
        await claimHeld;
      }
      if (pauseCommitted && statement.text.includes("'limit'")) releaseClaim(); // the worker read the pauses
      return result;
    },
    close: async () => {},
  };
  const errand = Errand.fromDriver(driver, { schema: t.schema });
  const ran: string[] = [];
  const worker = errand.worker({ handlers: { k: async (_payload, ctx) => void ran.push(ctx.id) }, rescueIntervalMs: 0 });
  const { id } = await t.errand.enqueue("k", {}, { concurrencyKey: "tenant:1" });
  await worker.start();
  try {
    await claimDone;
    await t.errand.pause({ kind: "k" });
    pauseCommitted = true;
    await eventually(async () => (await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE id = $1`, [id]))[0]!.status === "ready", 10_000, "the job given back");
    const [row] = await t.sql<{ attempts: number; started_at: unknown }>(`SELECT attempts, started_at FROM ${t.schema}.all_jobs WHERE id = $1`, [id]);
    expect(row!.attempts).toBe(0);
    expect(ran).toEqual([]);
    await t.errand.resume({ kind: "k" });
    await eventually(async () => (await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs WHERE id = $1`, [id]))[0]!.status === "done", 10_000, "the job done after resume");
    const [after] = await t.sql<{ attempts: number }>(`SELECT attempts FROM ${t.schema}.all_jobs WHERE id = $1`, [id]);
    expect(after!.attempts).toBe(1);
    expect(ran).toEqual([id]);
  } finally {
    releaseClaim();
    await worker.stop();
  }
});
