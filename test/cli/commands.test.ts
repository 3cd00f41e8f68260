import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliDatabase, errandCli } from "../support/cli.js";

const handlers = new URL("../fixtures/handlers.js", import.meta.url).pathname;

// One database for the file: CLI runs are processes, and the embedded database serves one
// process at a time, so these run in sequence.
const db = cliDatabase();
const cli = (...args: string[]) => errandCli([...args, ...db.flags]);
afterAll(() => db.cleanup());

beforeAll(async () => {
  const migrated = await cli("migrate");
  expect(migrated.stderr).toBe("");
  expect(migrated.stdout).toMatch(/applied migrations 1/);
});

describe("errand CLI", () => {
  it("migrate is idempotent", async () => {
    const again = await cli("migrate");
    expect(again).toMatchObject({ code: 0, stdout: expect.stringMatching(/is up to date/) });
  });

  it("enqueues a job and prints its id; a duplicate dedupe key prints the same id", async () => {
    const first = await cli("enqueue", "send_receipt", '{"order_id": 1042}', "--dedupe-key", "receipt:1042", "--max-attempts", "5");
    expect(first.code).toBe(0);
    expect(first.stdout.trim()).toMatch(/^\d+$/);
    const second = await cli("enqueue", "send_receipt", '{"order_id": 1042}', "--dedupe-key", "receipt:1042");
    expect(second.stdout.trim()).toBe(first.stdout.trim());
    expect(second.stderr).toContain("duplicate");
  });

  it("replaces a waiting job's payload with --dedupe replace", async () => {
    const first = await cli("enqueue", "debounced", '{"n": 1}', "--dedupe-key", "debounce:1", "--dedupe", "replace", "--delay", "600");
    const second = await cli("enqueue", "debounced", '{"n": 2}', "--dedupe-key", "debounce:1", "--dedupe", "replace", "--delay", "600", "--json");
    expect(JSON.parse(second.stdout)).toMatchObject({ id: first.stdout.trim(), payload: { n: 2 }, duplicate: true, replaced: true });
    expect(second.stderr).toContain("replaced");
  });

  it("cancels by id (all or nothing) and by kind; a finished or unknown job is an error and nothing changes", async () => {
    const a = (await cli("enqueue", "cancel_me", "{}", "--delay", "600")).stdout.trim();
    const b = (await cli("enqueue", "cancel_me", "{}", "--delay", "600")).stdout.trim();
    const unknown = await cli("cancel", a, "999999999");
    expect(unknown).toMatchObject({ code: 1, stdout: "" });
    expect(unknown.stderr).toMatch(/no job with id 999999999; nothing was cancelled/);
    expect(JSON.parse((await cli("cancel", a, "--json")).stdout)).toEqual({ ids: [a] });
    expect((await cli("cancel", a)).stderr).toMatch(new RegExp(`cannot cancel job ${a} \\(cancelled\\): already finished`));
    expect((await cli("cancel", "--kind", "cancel_me")).stdout.trim()).toBe(`cancelled 1 job: ${b}`);
    expect((await cli("cancel", "--kind", "cancel_mee")).stderr).toMatch(/unknown kind 'cancel_mee' — did you mean 'cancel_me'\?/);
    expect((await cli("cancel")).code).toBe(2);
  });

  it("runs a worker from a handlers module, lists the dead job, retries and discards it", async () => {
    const id = (await cli("enqueue", "always_fails", "{}", "--max-attempts", "1")).stdout.trim();
    // The worker exits by itself (SIGTERM, graceful) once the fixture's exit_now job runs.
    // Enqueue first: the embedded database serves one process at a time.
    await cli("enqueue", "exit_now", "{}", "--delay", "0.5");
    const result = await errandCli(["worker", "--handlers", handlers, "--poll-interval", "0.05", ...db.flags], {}, 60_000);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('"event":"stopped"');
    expect(result.stdout).toContain('"event":"job_dead"');
    const listed = await errandCli(["dead", "list", ...db.flags], { COLUMNS: "200" });
    expect(listed.stdout).toMatch(new RegExp(`^ *${id}  always_fails +1/1  \\S+Z  Error: the fixture always fails$`, "m"));
    const json = await cli("dead", "list", "--json", "--kind", "always_fails");
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ id, kind: "always_fails", status: "dead" })]);
    expect((await cli("dead", "retry", id)).stdout).toBe(`retried 1 job: ${id}\n`);
    expect((await cli("dead", "list")).stdout).toBe("no dead jobs\n");
    const missing = await cli("dead", "discard", id);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`errand: no dead job with id ${id} (it does not exist or is not dead); nothing was changed\n`);
  }, 240_000); // nine CLI runs; each reopens the embedded database

  describe("bad arguments: one line naming the argument, exit 2, nothing written", () => {
    const cases: [string[], RegExp][] = [
      [["enqueue", "k", "{not json"], /argument 'json'.*not valid JSON/],
      [["enqueue", "k", "{}", "--delay", "-5"], /--delay <seconds>.*'-5' is invalid.*≥ 0/],
      [["enqueue", "k", "{}", "--max-attempts", "0"], /--max-attempts <n>.*'0' is invalid/],
      [["enqueue", "k", "{}", "--max-attempts", "two"], /--max-attempts <n>.*'two' is invalid/],
      [["enqueue", "k", "{}", "--run-at", "tomorrow"], /--run-at <iso>.*'tomorrow' is invalid.*ISO 8601/],
      [["enqueue", "k", "{}", "--run-at", "2030-01-01T00:00:00Z", "--delay", "5"], /--run-at or --delay, not both/],
      [["enqueue", "k", '{"s": "\\u0000"}'], /payload\.s: contains a \\u0000/],
      [["enqueue", "k"], /missing required argument 'json'/],
      [["enqueue", "k", "{}", "--dedupe-key", "k", "--dedupe", "debounce"], /--dedupe <mode>.*'debounce' is invalid.*"retained", "active", "queued", "replace" or \{ ttlMs \}/],
      [["enqueue", "k", "{}", "--dedupe-key", "k", "--dedupe", "0"], /--dedupe <mode>.*'0' is invalid.*a ttl must be more than 0 seconds/],
      [["enqueue", "k", "{}", "--dedupe", "queued"], /dedupe: needs a dedupeKey/],
      [["worker"], /no jobs to run: give --config FILE .* or --handlers FILE/],
      [["worker", "--handlers", "./nope.js"], /--handlers: cannot load \.\/nope\.js/],
      [["worker", "--handlers", "x.js", "--concurrency", "0"], /--concurrency <n>.*'0' is invalid/],
      [["dead", "retry"], /give job ids, --kind KIND or --all/],
      [["dead", "discard", "abc"], /job id 'abc' is not a positive integer/],
      [["frobnicate"], /unknown command 'frobnicate'/],
      [["enqueue", "k", "{}", "--run-at", "2026-02-30T09:00:00Z"], /--run-at <iso>.*is not a date: February 2026 has 28 days/],
      [["enqueue", "k", '{"a\\u0000": 1}'], /payload\["a\\u0000"\]: key contains a \\u0000/],
      [["enqueue", "k", '{"a": "\\ud800"}'], /payload\.a: contains half of a surrogate pair/],
      [["enqueue", "k", `${"[".repeat(10_000)}${"]".repeat(10_000)}`], /payload: nests deeper than 1000 levels/],
      [["enqueue", "k", "{}", "--dedupe-key", "x".repeat(5000)], /dedupeKey: must be at most 1000 bytes/],
      [["worker", "--handlers", handlers, "--heartbeat-interval", "5", "--lease", "3"], /heartbeatIntervalMs: must be shorter than the shortest lease \(3000 ms\)/],
      [["dashboard", "--base-path", "../x"], /basePath: must look like "\/errand"/],
      [["dashboard", "--base-path", "/errand/../x"], /basePath: must look like "\/errand"/],
      [["dead", "retry", "9223372036854775808"], /job id '9223372036854775808' is not a positive integer/],
    ];
    // Each fails before connecting: at once, not after a pool's 10-second idle timeout.
    it.each(cases)("errand %j", async (args, message) => {
      const started = performance.now();
      const result = await cli(...args);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    });

    it("refuses a schema name too long for its derived names, before creating anything", async () => {
      const flags = db.flags.map((flag, i) => (db.flags[i - 1] === "--schema" ? flag.padEnd(52, "s") : flag));
      const started = performance.now();
      const result = await errandCli(["enqueue", "k", "{}", ...flags]);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(result).toMatchObject({ code: 2, stderr: expect.stringMatching(/^errand: schema: must be at most 51 characters/) });
    });

    it("wrote no job for any of them", async () => {
      const listed = await cli("dead", "list", "--json", "--kind", "k");
      expect(listed.stdout).toBe("");
      const stats = await cli("enqueue", "probe", "{}");
      // ids so far: the receipt and its duplicate, two debounced (one replaced the other), two cancel_me,
      // always_fails, exit_now, then this probe — no gaps from bad input
      expect(Number(stats.stdout.trim())).toBeLessThanOrEqual(9);
    });
  });
});
