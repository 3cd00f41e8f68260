import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { registerQueueGauges } from "../../src/observe/metrics.js";
import { ValidationError } from "../../src/index.js";
import { useTestErrand } from "../support/db.js";

// errand.publish writes to the outbox in the caller's transaction; both databases.
const t = useTestErrand();

const rows = () => t.sql<{ id: string; topic: string; key: string | null; message: unknown; headers: unknown }>(`SELECT id::text, topic, key, message, headers FROM ${t.schema}.outbox ORDER BY id`);

describe("publish", () => {
  it("a message published in a committed transaction is in the outbox; a rolled-back one never existed", async () => {
    const kept = await t.inTransaction((db) => t.errand.publish("orders.created", { orderId: 1 }, { db, key: "order:1", headers: { "trace-id": "abc" } }));
    await t.inTransaction((db) => t.errand.publish("orders.created", { orderId: 2 }, { db, key: "order:2" }), false);
    await t.inTransaction((db) => t.errand.publishMany([{ topic: "orders.paid", message: { orderId: 3 } }], { db }), false);
    expect(await rows()).toEqual([{ id: kept.id, topic: "orders.created", key: "order:1", message: { orderId: 1 }, headers: { "trace-id": "abc" } }]);
  });

  it("publishMany writes every message in one statement and returns ids in input order", async () => {
    const results = await t.errand.publishMany([
      { topic: "a.b", message: 1, key: "k" },
      { topic: "a.c", message: "two" },
      { topic: "a-b_c.D9", message: [null, true], headers: { x: "" } },
    ]);
    const stored = await rows();
    expect(stored.map((r) => r.id)).toEqual(results.map((r) => r.id));
    expect(stored.map((r) => [r.topic, r.key, r.message])).toEqual([
      ["a.b", "k", 1],
      ["a.c", null, "two"],
      ["a-b_c.D9", null, [null, true]],
    ]);
  });

  it("a plain SQL insert is a valid publish; the table refuses a topic the brokers cannot take", async () => {
    await t.sql(`INSERT INTO ${t.schema}.outbox (topic, key, message) VALUES ('orders.created', 'order:9', '{"orderId": 9}')`);
    expect((await rows()).map((r) => r.message)).toEqual([{ orderId: 9 }]);
    await expect(t.sql(`INSERT INTO ${t.schema}.outbox (topic, message) VALUES ('orders.*', '{}')`)).rejects.toThrow(/check constraint/);
    await expect(t.sql(`INSERT INTO ${t.schema}.outbox (topic, message) VALUES ('orders..x', '{}')`)).rejects.toThrow(/check constraint/);
  });

  it.each([
    ["orders.*", "topic"],
    ["orders.>", "topic"],
    ["orders created", "topic"],
    [".orders", "topic"],
    ["orders.", "topic"],
    ["", "topic"],
    ["x".repeat(201), "topic"],
  ])("refuses the topic %j, naming the field, and writes nothing", async (topic, field) => {
    const error = await t.errand.publish(topic, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe(field);
    expect(await rows()).toEqual([]);
  });

  it("refuses a message over the size limit, one that is not JSON, and bad keys or headers; in a batch nothing is written", async () => {
    const big = "x".repeat(256 * 1024);
    await expect(t.errand.publish("a.b", { big })).rejects.toThrow(/^message: is \d+ bytes of JSON, over the limit of 262144/);
    await expect(t.errand.publish("a.b", { at: new Date() as unknown as string })).rejects.toThrow(/^message\.at: is a Date/);
    await expect(t.errand.publish("a.b", undefined as unknown as null)).rejects.toThrow(/^message: is required/);
    await expect(t.errand.publish("a.b", 1, { key: "" })).rejects.toThrow(/^key: must be a non-empty string/);
    await expect(t.errand.publish("a.b", 1, { headers: { "Nats-Msg-Id": "1" } })).rejects.toThrow(/^headers\.Nats-Msg-Id: header names starting Nats- or Errand- are reserved/);
    await expect(t.errand.publish("a.b", 1, { headers: { "a b": "1" } })).rejects.toThrow(/^headers\.a b: header name must be/);
    await expect(t.errand.publish("a.b", 1, { headers: { a: "1\r\nb: 2" } })).rejects.toThrow(/^headers\.a: must be one line/);
    await expect(t.errand.publish("a.b", 1, { headers: { a: 1 as unknown as string } })).rejects.toThrow(/^headers\.a: must be a string/);
    await expect(t.errand.publish("a.b", 1, { kee: "x" } as never)).rejects.toThrow(/^options\.kee: unknown option — did you mean 'key'\?/);
    await expect(
      t.errand.publishMany([
        { topic: "a.b", message: 1 },
        { topic: "a b", message: 2 },
      ]),
    ).rejects.toThrow(/^messages\[1\]\.topic: "a b" is not a topic/);
    expect(await rows()).toEqual([]);
  });

  it("stats and the Prometheus gauges show the outbox's backlog and the age of its oldest message", async () => {
    expect((await t.errand.stats()).outbox).toEqual({ messages: 0, oldestAgeMs: null });
    await t.errand.publishMany([
      { topic: "a.b", message: 1 },
      { topic: "a.b", message: 2 },
    ]);
    await t.sql(`UPDATE ${t.schema}.outbox SET created_at = now() - interval '90 seconds' WHERE message = '1'`);
    const { outbox } = await t.errand.stats();
    expect(outbox?.messages).toBe(2);
    expect(outbox?.oldestAgeMs).toBeGreaterThanOrEqual(90_000);
    expect(outbox?.oldestAgeMs).toBeLessThan(120_000);
    const registry = new Registry();
    registerQueueGauges(registry, () => t.errand.stats());
    const text = await registry.metrics();
    expect(text).toMatch(/^errand_outbox_messages 2$/m);
    expect(text).toMatch(/^errand_outbox_oldest_age_seconds (9\d|1[01]\d)(\.\d+)?$/m);
  });
});
