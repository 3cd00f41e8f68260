import type { Driver } from "../driver/types.js";
import { observeQueriesFor } from "../sql/observe.js";

/** An alert incident that is open now. */
export interface OpenIncident {
  readonly key: string;
  readonly openedAt: Date;
  readonly message: string;
}

/**
 * Where open incidents are kept, so an alert fires once per incident. `open` and `close`
 * return true only for the caller that changed the state: that caller notifies.
 */
export interface IncidentStore {
  list(): Promise<OpenIncident[]>;
  open(key: string, message: string, at: Date): Promise<boolean>;
  close(key: string): Promise<OpenIncident | null>;
}

/** Incidents in this process's memory: one alerting process, state lost on restart. */
export function memoryIncidents(): IncidentStore {
  const open = new Map<string, OpenIncident>();
  return {
    list: async () => [...open.values()],
    async open(key, message, at) {
      if (open.has(key)) return false;
      open.set(key, { key, message, openedAt: at });
      return true;
    },
    async close(key) {
      const incident = open.get(key) ?? null;
      open.delete(key);
      return incident;
    },
  };
}

/**
 * Incidents in the `alert_incidents` table: several alerting processes (or restarts)
 * still notify each incident once.
 */
export function tableIncidents(driver: Driver, schema: string): IncidentStore {
  const q = observeQueriesFor(schema);
  return {
    async list() {
      const { rows } = await driver.run<{ key: string; opened_at: Date | string; message: string }>(q.listIncidents, []);
      return rows.map((row) => ({ key: row.key, message: row.message, openedAt: new Date(row.opened_at) }));
    },
    async open(key, message) {
      const { rows } = await driver.run(q.openIncident, [key, message]);
      return rows.length === 1;
    },
    async close(key) {
      const { rows } = await driver.run<{ key: string; opened_at: Date | string; message: string }>(q.closeIncident, [key]);
      return rows[0] ? { key, message: rows[0].message, openedAt: new Date(rows[0].opened_at) } : null;
    },
  };
}
