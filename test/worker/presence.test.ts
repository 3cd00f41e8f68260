import { expect, it } from "vitest";
import type { Driver, Statement } from "../../src/driver/types.js";
import { workerQueriesFor } from "../../src/sql/workers.js";
import { WorkerPresence } from "../../src/worker/presence.js";
import { useTestErrand } from "../support/db.js";

const t = useTestErrand();

/**
 * The errand's driver, but a refresh or a change of "waiting" sent while `hold` is set waits
 * until `letThrough()`, which first lets every other statement in flight finish: the order in
 * which a stopping worker's delete would overtake it.
 */
function holdingDriver() {
  const queries = workerQueriesFor(t.schema);
  const held = new Set([queries.present.name, queries.waiting.name]);
  const others = new Set<Promise<unknown>>();
  let release: (() => void) | undefined;
  let holding!: () => void;
  const state = {
    hold: false,
    /** Resolves once a write is held. */
    holding: new Promise<void>((resolve) => (holding = resolve)),
    async letThrough(): Promise<void> {
      await Promise.allSettled(others);
      release?.();
    },
  };
  const driver: Driver = {
    ...t.errand.driver,
    run: async <Row>(statement: Statement, params: readonly unknown[]) => {
      if (state.hold && held.has(statement.name)) {
        await new Promise<void>((resolve) => {
          release = resolve;
          holding();
        });
        return t.errand.driver.run<Row>(statement, params);
      }
      const running = t.errand.driver.run<Row>(statement, params);
      others.add(running);
      return running;
    },
  };
  return { driver, state };
}

const rows = () => t.sql<{ id: string }>(`SELECT id FROM ${t.schema}.workers`);

it.each(["a refresh", "a change of waiting"])("a worker that leaves while %s is in flight leaves no row behind, and writes none after", async (write) => {
  let now = 1_000_000;
  const { driver, state } = holdingDriver();
  const presence = new WorkerPresence(driver, t.schema, "leaving", ["default"], ["a"], { now: () => now });
  expect(await presence.refresh()).toBe(true);
  expect(await rows()).toEqual([{ id: "leaving" }]);

  state.hold = true;
  now += 16_000; // past the 15 s between refreshes
  const inFlight = write === "a refresh" ? presence.refresh() : presence.wait(false);
  await state.holding;
  const leaving = presence.leave();
  await state.letThrough();
  await Promise.all([inFlight, leaving]);
  expect(await rows()).toEqual([]);

  // Its timers may still fire as the worker stops: nothing more is written.
  state.hold = false;
  now += 16_000;
  expect(await presence.refresh()).toBe(false);
  await presence.wait(true);
  expect(await rows()).toEqual([]);
});
