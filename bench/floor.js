#!/usr/bin/env node
// What any durable PostgreSQL job queue pays on this machine, whatever its SQL: the round
// trip of `SELECT 1`, and a one-row INSERT into a table with a primary key alone, which
// waits for its commit's WAL flush. Back to back (as "enqueue one at a time" calls) and
// 20 ms apart (as at the latency scenario's 50 jobs/s, where an idle disk and CPU wake for
// each one). One-at-a-time enqueue is at most one call per such commit. A worker's pickup
// includes a commit too (the claim's), but one that follows the producer's by a fraction of
// a millisecond, on a machine that has just woken: it can be quicker than the 20 ms figure
// (round of 2026-12-04, late night, in bench/README.md), so the latency scenarios' raw-SQL
// row, not this, is the pickup's reference. Each figure is given as its median and its 99th
// percentile (the latency targets' p99), per round.
//
//   node bench/floor.js [--calls 200] [--rounds 3]
import { parseArgs } from "node:util";
import pg from "pg";
import { median, percentile, pgUrl, sleep } from "./lib/common.js";

const { values: args } = parseArgs({ options: { calls: { type: "string", default: "200" }, rounds: { type: "string", default: "3" } } });
const table = `bench_floor_${process.pid}`;
const c = new pg.Client(pgUrl);
await c.connect();
await c.query(`CREATE TABLE ${table} (id bigserial PRIMARY KEY)`);
try {
  const timed = async (query) => {
    const started = performance.now();
    await c.query(query);
    return performance.now() - started;
  };
  const insert = { name: "floor_insert", text: `INSERT INTO ${table} DEFAULT VALUES` };
  const select = { name: "floor_select", text: "SELECT 1" };
  // Per pace and statement, each round's p50 and p99.
  const rounds = { 0: { insert: [], select: [] }, 20: { insert: [], select: [] } };
  // Rounds interleave the two paces, so a slow minute falls on both.
  for (let round = 0; round < Number(args.rounds); round++) {
    for (const gapMs of [0, 20]) {
      const inserts = [];
      const selects = [];
      for (let i = 0; i < Number(args.calls); i++) {
        inserts.push(await timed(insert));
        selects.push(await timed(select));
        if (gapMs) await sleep(gapMs);
      }
      rounds[gapMs].insert.push([percentile(inserts, 50), percentile(inserts, 99)]);
      rounds[gapMs].select.push([percentile(selects, 50), percentile(selects, 99)]);
    }
  }
  const ms = (values) => `${median(values).toFixed(2)} ms (rounds ${values.map((v) => v.toFixed(2)).join(", ")})`;
  const both = (pairs) => `p50 ${ms(pairs.map(([p50]) => p50))}, p99 ${ms(pairs.map(([, p99]) => p99))}`;
  for (const gapMs of [0, 20]) {
    console.log(`${gapMs ? "20 ms apart" : "back to back"}: one-row INSERT and commit ${both(rounds[gapMs].insert)}; SELECT 1 ${both(rounds[gapMs].select)}`);
  }
} finally {
  await c.query(`DROP TABLE ${table}`);
  await c.end();
}
