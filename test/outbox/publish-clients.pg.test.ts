import postgres from "postgres";
import { afterAll, expect, it } from "vitest";
import { fromPostgresJs } from "../../src/index.js";
import { useTestErrand } from "../support/db.js";

// PostgreSQL only: publish joins a transaction opened by postgres.js, through its adapter.
const t = useTestErrand();
const sql = postgres(process.env.ERRAND_TEST_URL!, { max: 2, onnotice: () => {} });
afterAll(() => sql.end());
const rollback = new Error("roll back");

it("a message published in a postgres.js transaction commits and rolls back with it", async () => {
  await sql.begin(async (tx) => {
    await t.errand.publish("orders.created", { orderId: 1 }, { db: fromPostgresJs(tx), key: "order:1" });
  });
  await sql
    .begin(async (tx) => {
      await t.errand.publishMany([{ topic: "orders.created", message: { orderId: 2 } }], { db: fromPostgresJs(tx) });
      throw rollback;
    })
    .catch((error: unknown) => {
      if (error !== rollback) throw error;
    });
  expect(await t.sql(`SELECT topic, key, message FROM ${t.schema}.outbox`)).toEqual([{ topic: "orders.created", key: "order:1", message: { orderId: 1 } }]);
});
