import { afterEach, beforeEach, expect, it } from "vitest";
import { checkOrderPerKey, testStream } from "../support/brokers.js";
import { type TestErrand, eventually, testErrand } from "../support/db.js";
import { type Spawned, databaseUrl, killAll, spawnErrand } from "../support/process.js";
import { natsUrl } from "../support/services.js";

// Real relay processes (the built CLI), SIGKILLed again and again while they relay to
// JetStream: nothing is lost, nothing reaches the stream twice, order per key holds.
// CI runs 20,000 messages; the full run is the same test with
// ERRAND_RELAY_KILL_MESSAGES=100000 (the kills are spread over the run either way).
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

const total = Number(process.env.ERRAND_RELAY_KILL_MESSAGES ?? 20_000);
const keys = 200;
const kills = 10;

function startRelay(name: string): Spawned {
  const relay = spawnErrand(name, ["relay", "--to", natsUrl, "--stream", stream.name, "--subject-prefix", stream.subjectPrefix, "--database-url", databaseUrl, "--schema", t.schema, "--batch-size", "200", "--poll-interval", "0.05", "--verbose"]);
  running.add(relay);
  return relay;
}

const backlog = async () => Number((await t.sql<{ n: string }>(`SELECT count(*) AS n FROM ${t.schema}.outbox`))[0]!.n);

it(`SIGKILL the relays ${kills} times during a ${total.toLocaleString("en")}-message run: every message in the stream exactly once, in order per key`, async () => {
  for (let start = 0; start < total; start += 2_000) {
    const size = Math.min(2_000, total - start);
    await t.errand.publishMany(Array.from({ length: size }, (_, i) => ({ topic: "orders.changed", key: `k${(start + i) % keys}`, message: { key: `k${(start + i) % keys}`, seq: Math.floor((start + i) / keys) } })));
  }
  const started = performance.now();
  const relays = [startRelay("relay-a0"), startRelay("relay-b0")];
  let killed = 0;
  for (let kill = 1; kill <= kills; kill++) {
    const sentBatches = (relay: Spawned) => relay.logs.filter((r) => r.event === "sent").length;
    // Spread over the run: the k-th kill once the backlog is down to (kills + 1 - k) / (kills + 1) of it,
    // of the relay that sends the next batch (it is mid-run, not starting up). Not a fixed
    // one: a batch locks every free partition, so one relay may do all the work for a while.
    const due = Math.floor((total * (kills + 1 - kill)) / (kills + 1));
    await eventually(async () => (await backlog()) <= due, 120_000, `the backlog down to ${due}`);
    const before = relays.map(sentBatches);
    // 1 + the index: index 0 is falsy.
    const victim = (await eventually(() => 1 + relays.findIndex((relay, j) => sentBatches(relay) > before[j]!), 30_000, "a batch sent")) - 1;
    await relays[victim]!.kill("SIGKILL");
    killed++;
    running.delete(relays[victim]!);
    relays[victim] = startRelay(`relay-${victim === 0 ? "a" : "b"}${kill}`);
  }
  await eventually(async () => (await backlog()) === 0, 120_000, "an empty outbox");
  const seconds = (performance.now() - started) / 1000;
  const received = await stream.read();
  const distinct = new Set(received.map((r) => r.id)).size;
  console.log(`relay kill run: ${total} messages, ${killed} SIGKILLs, ${seconds.toFixed(1)} s, ${received.length} in the stream, ${received.length - distinct} duplicates`);
  expect(killed).toBe(kills);
  expect(received).toHaveLength(total);
  expect(distinct).toBe(total);
  expect([...checkOrderPerKey(received).values()]).toEqual(Array.from({ length: keys }, () => total / keys));
}, 240_000 + total * 3);
