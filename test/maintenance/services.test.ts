import { describe, expect, it, vi } from "vitest";
import { type Alert, PermanentError, ValidationError } from "../../src/index.js";
import { useTestErrand } from "../support/db.js";

// The background services are created from the client, like workers: they talk to its
// database and schema, and errand.close() stops them.
const t = useTestErrand();

const statuses = async () => (await t.sql<{ status: string }>(`SELECT status FROM ${t.schema}.all_jobs j ORDER BY j.id`)).map((r) => r.status);

describe("services created from the client", () => {
  it("errand.rescuer() returns expired leases to ready, buries the last attempt, and reports each timed run", async () => {
    await t.errand.enqueueMany([{ kind: "k", payload: {} }, { kind: "k", payload: {}, maxAttempts: 1 }, { kind: "k", payload: {} }]);
    // Two workers died holding the first two jobs; the third job's lease still holds.
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(), locked_by = 'gone', locked_until = now() - interval '1 minute'
                 WHERE id IN (SELECT id FROM ${t.schema}.jobs j ORDER BY j.id LIMIT 2)`);
    await t.sql(`UPDATE ${t.schema}.jobs SET status = 'running', attempts = 1, started_at = now(), locked_by = 'alive', locked_until = now() + interval '1 minute' WHERE status = 'ready'`);
    const runs: unknown[] = [];
    const rescuer = t.errand.rescuer({ intervalMs: 60_000, onRescue: (result) => runs.push(result) });
    await rescuer.start(); // resolves after its first run
    expect(runs).toEqual([{ ready: 1, dead: 1 }]);
    expect(await statuses()).toEqual(["ready", "dead", "running"]);
    expect(await rescuer.runOnce()).toEqual({ ready: 0, dead: 0 });
    await rescuer.stop();
  });

  it("errand.rescuer() checks its options, naming the field", () => {
    expect(() => t.errand.rescuer({ intervalMs: 0 })).toThrow(ValidationError);
    expect(() => t.errand.rescuer({ intervalMs: 0 })).toThrow(/intervalMs/);
    expect(() => t.errand.rescuer({ interval: 5 } as never)).toThrow(/interval: unknown option — did you mean 'intervalMs'\?/);
  });

  it("errand.purger() purges this database's done jobs past the retention", async () => {
    await t.errand.enqueueMany([{ kind: "k", payload: 1 }, { kind: "k", payload: 2 }]);
    await t.errand.worker({ handlers: { k: async () => {} } }).runOnce();
    await t.sql(`UPDATE ${t.schema}.done_jobs SET finished_at = now() - interval '8 days' WHERE payload = '1'`);
    expect(await t.errand.purger().runOnce()).toEqual({ done: 1, cancelled: 0, dead: 0, finishedBatches: 0, batches: 4, dryRun: false });
    expect(await statuses()).toEqual(["done"]);
  });

  it("errand.alerter() reads this database's stats and keeps its incidents in the table", async () => {
    const alerts: Alert[] = [];
    const alerter = t.errand.alerter({ notifiers: [{ notify: async (alert) => void alerts.push(alert) }] });
    expect(await alerter.runOnce()).toEqual([]);
    await t.errand.enqueue("email", {});
    await t.errand.worker({ handlers: { email: async () => { throw new PermanentError("bad address"); } } }).runOnce();
    expect((await alerter.runOnce()).map((a) => a.key)).toEqual(["dead_jobs:email"]);
    expect(await t.sql(`SELECT key FROM ${t.schema}.alert_incidents`)).toEqual([{ key: "dead_jobs:email" }]);
    expect(alerts.map((a) => a.status)).toEqual(["firing"]);
  });

  it("errand.close() stops every service created from the client", async () => {
    const services = [t.errand.purger(), t.errand.rescuer(), t.errand.alerter({ notifiers: [{ notify: async () => {} }] })];
    await Promise.all(services.map((service) => service.start()));
    const stops = services.map((service) => vi.spyOn(service, "stop"));
    await t.errand.close();
    for (const stop of stops) expect(stop).toHaveBeenCalledOnce();
  });
});
