import { afterEach, beforeEach, expect, it } from "vitest";
import { checkOrderPerKey, testStream } from "../support/brokers.js";
import { type TestErrand, eventually, testErrand } from "../support/db.js";
import { type Spawned, databaseUrl, killAll, spawnErrand } from "../support/process.js";
import { natsUrl } from "../support/services.js";

// Real relay processes (the built CLI), SIGKILLed again and again while they relay to
// JetStream: nothing is lost, nothing reaches the stream twice, order per key holds.
let t: TestErrand;
let stream: Awaited<ReturnType<typeof testStream>>;
const running = new Set<Spawned>();
beforeEach(async () => {
  t = await testErrand();
  stream = await testStream();
});
afterEach(async () => {
  await killAll(running);
  await stream.close();
  await t.cleanup();
});

const total = 20_000;
const keys = 200;

function startRelay(name: string): Spawned {
  const relay = spawnErrand(name, ["relay", "--to", natsUrl, "--stream", stream.name, "--subject-prefix", stream.subjectPrefix, "--database-url", databaseUrl, "--schema", t.schema, "--batch-size", "200", "--poll-interval", "0.05", "--verbose"]);
  running.add(relay);
  return relay;
}

it("SIGKILL the relays 8 times during a 20,000-message run: every message in the stream exactly once, in order per key", async () => {
  for (let start = 0; start < total; start += 2_000) {
    await t.errand.publishMany(Array.from({ length: 2_000 }, (_, i) => ({ topic: "orders.changed", key: `k${(start + i) % keys}`, message: { key: `k${(start + i) % keys}`, seq: Math.floor((start + i) / keys) } })));
  }
  const relays = [startRelay("relay-a0"), startRelay("relay-b0")];
  for (let kill = 1; kill <= 8; kill++) {
    const victim = kill % 2;
    const before = relays[victim]!.logs.filter((r) => r.event === "sent").length;
    // Kill it mid-run: after it has sent at least one more batch.
    await relays[victim]!.waitForLog(() => relays[victim]!.logs.filter((r) => r.event === "sent").length > before, 30_000, "a batch sent");
    await relays[victim]!.kill("SIGKILL");
    running.delete(relays[victim]!);
    relays[victim] = startRelay(`relay-${victim === 0 ? "a" : "b"}${kill}`);
  }
  await eventually(async () => Number((await t.sql<{ n: string }>(`SELECT count(*) AS n FROM ${t.schema}.outbox`))[0]!.n) === 0, 120_000, "an empty outbox");
  const received = await stream.read();
  expect(received).toHaveLength(total);
  expect(new Set(received.map((r) => r.id)).size).toBe(total);
  expect([...checkOrderPerKey(received).values()]).toEqual(Array.from({ length: keys }, () => total / keys));
}, 240_000);
