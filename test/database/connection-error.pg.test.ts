import { randomBytes } from "node:crypto";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { Errand } from "../../src/index.js";
import { eventually } from "../support/db.js";

// PostgreSQL only: PGlite has no connection to lose.
describe("onConnectionError", () => {
  it("receives the error when an idle connection of errand's pool is killed, and errand carries on", async () => {
    const app = `errand_conn_${randomBytes(4).toString("hex")}`;
    const schema = `t_${randomBytes(6).toString("hex")}`;
    const url = new URL(process.env.ERRAND_TEST_URL!);
    url.searchParams.set("application_name", app);
    const errors: Error[] = [];
    const errand = await Errand.open({ connectionString: url.href, schema, onConnectionError: (error) => errors.push(error) });
    const admin = new pg.Client({ connectionString: process.env.ERRAND_TEST_URL });
    await admin.connect();
    try {
      const { rows } = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle'", [app]);
      expect(rows.length).toBeGreaterThan(0);
      await eventually(() => errors.length > 0, 10_000, "onConnectionError to be called");
      expect(errors[0]).toBeInstanceOf(Error);
      const { id } = await errand.enqueue("k", {}); // the pool opens a new connection
      expect(await errand.getJob(id)).toMatchObject({ kind: "k", status: "ready" });
      // A driver built elsewhere has its own error listener (pgDriver's onError): refused, not silently ignored.
      expect(() => Errand.fromDriver(errand.driver, { onConnectionError: () => {} } as never)).toThrow(/onConnectionError: unknown option/);
    } finally {
      await errand.close();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    }
  });

  it("fails only the transaction or session whose connection is killed while errand holds it, not the process", async () => {
    const schema = `t_${randomBytes(6).toString("hex")}`;
    const errand = await Errand.open({ connectionString: process.env.ERRAND_TEST_URL, schema });
    const admin = new pg.Client({ connectionString: process.env.ERRAND_TEST_URL });
    await admin.connect();
    // Kills the connection between two statements: without a listener of errand's, the
    // connection's error event would be unheard and end the process (vitest: an uncaught error).
    const killOwn = async (q: { query<Row>(sql: string): Promise<{ rows: Row[] }> }) => {
      const [{ pid }] = (await q.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows as [{ pid: number }];
      await admin.query("SELECT pg_terminate_backend($1, 10000)", [pid]);
      await q.query("SELECT 1");
    };
    try {
      await expect(errand.driver.transaction(killOwn)).rejects.toThrow(/terminat|not queryable/i);
      await expect(errand.driver.session(killOwn)).rejects.toThrow(/terminat|not queryable/i);
      // The killed connections were closed, not given back: the next ones work.
      await errand.driver.transaction(async (tx) => void (await tx.query("SELECT 1")));
      const { id } = await errand.enqueue("k", {});
      expect(await errand.getJob(id)).toMatchObject({ status: "ready" });
    } finally {
      await errand.close();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    }
  });
});
