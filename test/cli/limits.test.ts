import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliDatabase, errandCli } from "../support/cli.js";

// One database for the file; CLI runs are processes, in sequence.
const db = cliDatabase();
const cli = (...args: string[]) => errandCli([...args, ...db.flags]);
afterAll(() => db.cleanup());
beforeAll(async () => {
  expect((await cli("migrate")).code).toBe(0);
});

describe("errand limits", () => {
  it("sets, lists and removes a queue's limit and a key's limits", async () => {
    expect((await cli("limits", "set", "--queue", "email", "--concurrency", "10")).code).toBe(0);
    expect((await cli("limits", "set", "--key", "tenant:*", "--concurrency", "2", "--rate", "10/s")).code).toBe(0);
    const listed = await cli("limits", "list", "--json");
    expect(JSON.parse(listed.stdout)).toEqual({
      queues: [{ queue: "email", concurrency: 10, running: 0 }],
      keys: [{ key: "tenant:*", concurrency: 2, rate: { count: 10, periodMs: 1000 }, running: 0, ready: 0, rateHeld: 0 }],
    });
    expect((await cli("limits", "list")).stdout).toContain("queue email: 0 running of 10");
    expect((await cli("limits", "remove", "--queue", "email")).stdout).toContain("removed");
    expect((await cli("limits", "remove", "--key", "tenant:*")).stdout).toContain("removed");
    expect((await cli("limits", "list")).stdout).toContain("no limits");
  });

  it.each([
    [["--queue", "email", "--concurrency", "0"], /--concurrency/],
    [["--queue", "email", "--concurrency", "-3"], /--concurrency/],
    [["--queue", "email", "--concurrency", "1.5"], /--concurrency/],
    [["--queue", "email", "--rate", "10/s"], /--rate is for keys/],
    [["--key", "api", "--rate", "10/fortnight"], /--rate/],
    [["--queue", "bad name", "--concurrency", "2"], /--queue/],
    [["--concurrency", "2"], /exactly one/],
  ])("refuses %j with exit 2, naming the flag, and writes nothing", async (args, message) => {
    const run = await cli("limits", "set", ...args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(JSON.parse((await cli("limits", "list", "--json")).stdout)).toEqual({ queues: [], keys: [] });
  });
});
