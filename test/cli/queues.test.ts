import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliDatabase, errandCli } from "../support/cli.js";

const handlers = new URL("../fixtures/handlers.js", import.meta.url).pathname;

// One database for the file; CLI runs are processes, in sequence.
const db = cliDatabase();
const cli = (...args: string[]) => errandCli([...args, ...db.flags]);
afterAll(() => db.cleanup());
beforeAll(async () => {
  expect((await cli("migrate")).code).toBe(0);
});

describe("errand pause / resume / stats / worker --queue", () => {
  it("pauses a queue or a kind, once", async () => {
    expect((await cli("pause", "--queue", "email")).stdout.trim()).toBe("paused queue 'email'");
    expect((await cli("pause", "--queue", "email")).stdout.trim()).toBe("queue 'email' was paused already");
    expect(JSON.parse((await cli("pause", "--kind", "mail", "--json")).stdout)).toEqual({ paused: true });
  }, 180_000); // CLI runs each reopen the embedded database

  it("shows the pauses in errand stats; resume undoes them", async () => {
    expect((await cli("enqueue", "mail", "{}")).code).toBe(0);
    const table = (await cli("stats")).stdout;
    expect(table).toMatch(/queue\s+ready\s+scheduled\s+running\s+limit\s+state/);
    expect(table).toMatch(/email\s+0\s+0\s+0\s+paused/);
    expect(table).toMatch(/default\s+1\s+0\s+0\s+active/);
    expect(table).toContain("paused kinds: mail");
    expect(table).toContain("ready jobs no live worker serves (a mistyped kind?):");
    expect(table).toMatch(/\ndefault\s+mail\s+1\n/);
    const json = JSON.parse((await cli("stats", "--json")).stdout) as { queues: Record<string, unknown>; pausedKinds: string[] };
    expect(json.queues.email).toEqual({ ready: 0, scheduled: 0, running: 0, paused: true, limit: null });
    expect(json.pausedKinds).toEqual(["mail"]);
    expect(JSON.parse((await cli("resume", "--queue", "email", "--json")).stdout)).toEqual({ resumed: true });
    expect((await cli("resume", "--kind", "mail")).stdout.trim()).toBe("resumed kind 'mail'");
  }, 240_000);

  it("refuses a bad target with exit 2 and a message naming it", async () => {
    expect((await cli("pause")).code).toBe(2);
    expect((await cli("pause", "--queue", "a", "--kind", "b")).stderr).toMatch(/give --queue NAME or --kind KIND \(exactly one\)/);
    const bad = await cli("pause", "--queue", "no spaces");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/queue: must be a queue name/);
  });

  it("worker: a malformed --queue, a bad name or a concurrency below 1 exits 2 naming --queue, before connecting", async () => {
    const cases: [string[], RegExp][] = [
      [["--queue", "bad name=2"], /--queue.*must be a queue name/],
      [["--queue", "email=0"], /--queue.*must be an integer from 1 to 10000 \(got 0\)/],
      [["--queue", "email=-3"], /--queue.*must be name=concurrency with a whole number/],
      [["--queue", "email=ten"], /--queue.*must be name=concurrency with a whole number/],
      [["--queue", "email=1", "--queue", "email=2"], /--queue.*queue 'email' is given twice/],
      [["--queue", "email=1", "--concurrency", "3"], /concurrency: give concurrency or queues, not both/],
    ];
    for (const [args, message] of cases) {
      const run = await cli("worker", "--handlers", handlers, ...args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr, args.join(" ")).toMatch(message);
    }
  }, 240_000);
});
