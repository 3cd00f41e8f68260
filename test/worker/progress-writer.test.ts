import { expect, it } from "vitest";
import type { Driver, Statement } from "../../src/driver/types.js";
import { queriesFor } from "../../src/sql/jobs.js";
import type { ClaimedJob } from "../../src/worker/executor.js";
import { ProgressWriter } from "../../src/worker/progress.js";
import { useTestErrand } from "../support/db.js";

// A handler's last progress, reported just before it returns, may already be in a write
// when its job completes; a completion that commits first leaves that write nothing to
// update. So the completion takes the value of a write in flight too, and writes it itself.
const t = useTestErrand();

/** The errand's driver, but the progress statement waits for `letThrough(fail)` and then runs, or fails. */
function holdingDriver() {
  let release: ((fail: boolean) => void) | undefined;
  let holding!: () => void;
  const state = {
    holding: new Promise<void>((resolve) => (holding = resolve)),
    letThrough: (fail = false) => release?.(fail),
  };
  const driver: Driver = {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      if (statement.name === queriesFor(t.schema).progress.name) {
        const fail = await new Promise<boolean>((resolve) => {
          release = resolve;
          holding();
        });
        if (fail) throw Object.assign(new Error("connection terminated (test)"), { code: "57P01" });
      }
      return t.errand.driver.run<Row>(statement, params);
    },
  };
  return { driver, state };
}

async function runningJob(): Promise<ClaimedJob> {
  const { id } = await t.errand.enqueue("k", {});
  await t.sql(queriesFor(t.schema).claim.text, [1, "w", "{}", 60_000, 1, "default", ["k"]]);
  return { id, attempt: 1 } as ClaimedJob;
}

it("a job that finishes while its last progress is being written takes that value for its completion", async () => {
  const job = await runningJob();
  const { driver, state } = holdingDriver();
  const writer = new ProgressWriter(driver, queriesFor(t.schema), "w", 1_000, () => {}, { now: () => 0 });
  writer.report(job, "20000");
  const flushing = writer.flush();
  await state.holding;
  expect(writer.take(job)).toBe("20000");
  state.letThrough();
  await flushing;
  expect(writer.take(job)).toBeUndefined();
});

it("a write that fails keeps its values for the next one, except those their finished job took", async () => {
  const [finished, running] = [await runningJob(), await runningJob()];
  const { driver, state } = holdingDriver();
  const writer = new ProgressWriter(driver, queriesFor(t.schema), "w", 1_000, () => {}, { now: () => 0 });
  writer.report(finished, "1");
  writer.report(running, "2");
  const flushing = writer.flush();
  await state.holding;
  expect(writer.take(finished)).toBe("1");
  state.letThrough(true);
  await expect(flushing).rejects.toThrow("connection terminated");
  expect(writer.take(finished)).toBeUndefined();
  expect(writer.take(running)).toBe("2");
  writer.stop();
});
