import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { networkInterfaces } from "node:os";
import { stripVTControlCharacters } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { drain } from "../../src/testing/drain.js";
import { cliDatabase, errandCli } from "../support/cli.js";
import { eventually } from "../support/db.js";
import { errandBin, root, spawnErrand } from "../support/process.js";

// The CLI's conventions (README, "CLI"): one JSON document per --json run, tables that fit
// the width, colour only where wanted, exit codes. One database for the file: CLI runs are
// processes and the embedded database serves one process at a time, so these run in
// sequence.
const db = cliDatabase();
const cli = (...args: string[]) => errandCli([...args, ...db.flags]);
afterAll(() => db.cleanup());

const longKind = "billing.invoice.send_overdue_reminder_email";
// A handler's error may hold anything: a newline, a terminal escape, a long line.
const nastyError = `\u001b[2Jcleared your screen ${"and kept talking ".repeat(12)}\nsecond line`;
let deadId: string;

beforeAll(async () => {
  const errand = await db.open();
  try {
    await errand.enqueue("send_receipt", { order_id: 1 });
    await errand.enqueue(longKind, {}, { delay: 3_600_000 });
    deadId = (await errand.enqueue("always_fails", {}, { maxAttempts: 1 })).id;
    await drain(errand, {
      send_receipt: async () => {},
      always_fails: async () => {
        throw new Error(nastyError);
      },
    });
    await errand.enqueue("send_receipt", { order_id: 2 });
    await errand.schedules.declare([{ name: "nightly-report-for-every-region", cron: "0 2 * * *", timezone: "America/New_York", kind: "send_report", missed: "catch_up" }]);
  } finally {
    await errand.close();
  }
}, 120_000);

/** The lines of an output, colour codes removed. */
const lines = (out: string) => stripVTControlCharacters(out).trimEnd().split("\n");

describe("--json: one JSON document per run", () => {
  it("enqueue prints the job as stored, and says when the dedupe key was taken", async () => {
    const first = await cli("enqueue", "resize", '{"w": 64}', "--dedupe-key", "resize:1", "--json");
    expect(first.code).toBe(0);
    const job = JSON.parse(first.stdout) as Record<string, unknown>;
    expect(job).toMatchObject({ id: expect.stringMatching(/^\d+$/), kind: "resize", payload: { w: 64 }, status: "ready", attempts: 0, maxAttempts: 8, dedupeKey: "resize:1", duplicate: false });
    expect(new Date(job.runAt as string).toISOString()).toBe(job.runAt);
    const again = await cli("enqueue", "resize", '{"w": 64}', "--dedupe-key", "resize:1", "--json");
    expect(JSON.parse(again.stdout)).toMatchObject({ id: job.id, duplicate: true });
    expect(again.stderr).toContain("duplicate");
  }, 120_000);

  it("lists are one array; stats, purge and plan one object", async () => {
    const dead = JSON.parse((await cli("dead", "list", "--json")).stdout) as Record<string, unknown>[];
    expect(dead).toEqual([expect.objectContaining({ id: deadId, kind: "always_fails", status: "dead", lastError: expect.stringContaining("second line") })]);
    const schedules = JSON.parse((await cli("schedules", "list", "--json")).stdout) as unknown[];
    expect(schedules).toEqual([expect.objectContaining({ name: "nightly-report-for-every-region", kind: "send_report", paused: false, nextRun: expect.any(String) })]);
    const stats = JSON.parse((await cli("stats", "--json")).stdout) as { at: string; total: Record<string, number>; kinds: Record<string, unknown> };
    expect(stats.total).toMatchObject({ ready: 2, scheduled: 1, dead: 1, done: 1 });
    expect(Object.keys(stats.kinds)).toEqual(["always_fails", longKind, "resize", "send_receipt"]);
    expect(JSON.parse((await cli("purge", "--json", "--dry-run")).stdout)).toEqual({ done: 0, cancelled: 0, dead: 0, finishedBatches: 0, batches: expect.any(Number), dryRun: true });
    const plan = await errandCli(["plan", "--json", "--max-attempts", "3", "--rate", "600/h", "--duration", "8s", "--burst", "300", "--workers", "4"]);
    expect(JSON.parse(plan.stdout)).toEqual({
      retry: {
        policy: { baseDelayMs: 30_000, maxDelayMs: 3_600_000, factor: 2, jitter: 0.5 },
        maxAttempts: 3,
        steps: [
          { failure: 1, waitMs: 30_000, minWaitMs: 15_000, cumulativeMs: 30_000, minCumulativeMs: 15_000 },
          { failure: 2, waitMs: 60_000, minWaitMs: 30_000, cumulativeMs: 90_000, minCumulativeMs: 45_000 },
        ],
        lastAttemptMs: 90_000,
        minLastAttemptMs: 45_000,
      },
      capacity: { jobsPerHour: 600, durationMs: 8_000, workers: 4_800 / 3_600, minWorkers: 2, burst: 300, burstWorkers: 4, burstClearMs: 600_000 },
    });
    // Every one is a single line: `jq` and line-based tools read it alike.
    expect(plan.stdout.trimEnd().split("\n")).toHaveLength(1);
  }, 180_000);
});

describe("a --kind nobody uses is a typo: exit 1 with did-you-mean, nothing changed", () => {
  it("stats, dead list and dead discard say so; a known kind with nothing to show is an empty answer", async () => {
    const stats = await cli("stats", "--kind", "send_reciept");
    expect(stats).toMatchObject({ code: 1, stdout: "" });
    expect(stats.stderr).toBe(`errand: unknown kind 'send_reciept' — did you mean 'send_receipt'? (known kinds: always_fails, ${longKind}, resize, send_receipt, send_report)\n`);
    const list = await cli("dead", "list", "--json", "--kind", "always_fail");
    expect(list).toMatchObject({ code: 1, stdout: "", stderr: expect.stringMatching(/^errand: unknown kind 'always_fail' — did you mean 'always_fails'\?/) });
    const discard = await cli("dead", "discard", "--kind", "nosuch");
    expect(discard).toMatchObject({ code: 1, stdout: "", stderr: expect.stringMatching(/^errand: unknown kind 'nosuch' \(known kinds: /) });
    expect(await cli("dead", "list", "--json", "--kind", "send_receipt")).toMatchObject({ code: 0, stdout: "[]\n" });
  }, 180_000);
});

describe("errand with no command, and --version", () => {
  it("prints the help on stderr and exits 2; --version prints package.json's version", async () => {
    const bare = await errandCli([]);
    expect(bare).toMatchObject({ code: 2, stdout: "" });
    expect(bare.stderr).toMatch(/^Usage: errand \[options\] \[command\]/);
    expect(bare.stderr).toMatch(/^ {2}stats \[options\]/m);
    const { version } = JSON.parse(readFileSync(`${root}/package.json`, "utf8")) as { version: string };
    expect(await errandCli(["--version"])).toMatchObject({ code: 0, stdout: `${version}\n` });
  });
});

describe("tables", () => {
  const tables = [["stats"], ["dead", "list"], ["schedules"]];

  it("piped: no colour or escape codes, not even from a job's error, and no line past 80 columns", async () => {
    for (const args of tables) {
      const out = await errandCli([...args, ...db.flags], { NO_COLOR: "1" });
      expect(out.code).toBe(0);
      expect(out.stdout).not.toContain("\u001b");
      for (const line of out.stdout.trimEnd().split("\n")) expect(Array.from(line).length, `${args.join(" ")}: ${line}`).toBeLessThanOrEqual(80);
    }
    const dead = lines((await cli("dead", "list")).stdout);
    expect(dead[0]).toMatch(/^ID\s+KIND\s+ATTEMPTS\s+DIED\s+LAST ERROR$/);
    expect(dead[1]).toMatch(new RegExp(`^ *${deadId}  always_fails {7}1/1  \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ  Error: \\\\u001b\\[2Jcleared.*…$`));
    // The error takes the rest of the line.
    expect(Array.from(dead[1]!)).toHaveLength(80);
  }, 240_000);

  it("FORCE_COLOR colours them even when piped, and COLUMNS sets the width", async () => {
    for (const args of tables) {
      const out = await errandCli([...args, ...db.flags], { FORCE_COLOR: "1", COLUMNS: "60" });
      expect(out.stdout, args.join(" ")).toContain("\u001b[1m");
      for (const line of lines(out.stdout)) expect(Array.from(line).length, `${args.join(" ")}: ${line}`).toBeLessThanOrEqual(60);
    }
    const wide = lines((await errandCli(["stats", ...db.flags], { COLUMNS: "300" })).stdout);
    expect(wide[0]).toMatch(/^kind\s+ready\s+scheduled\s+running\s+done\s+dead\s+cancelled\s+oldest ready\s+expired leases\s+done\/1m\s+failed\/1m\s+timed out\/1m\s+cancelled\/1m\s+done\/1h\s+failed\/1h\s+timed out\/1h\s+cancelled\/1h\s+fail rate\/1h$/);
    expect(wide.find((line) => line.startsWith(longKind))).toMatch(/^billing\.invoice\.send_overdue_reminder_email\s+0\s+1\s/);
  }, 240_000);

  it("stats --watch, piped, prints one snapshot after another without redrawing", async () => {
    const watch = spawnErrand("errand stats --watch", ["stats", "--watch", "0.1", ...db.flags]);
    try {
      await eventually(() => watch.stdout().split("\nat ").length > 3, 60_000, "three snapshots");
    } finally {
      watch.child.kill("SIGINT");
    }
    expect((await watch.exited).code).toBe(0);
    expect(watch.stdout()).not.toContain("\u001b");
    const snapshots = watch.stdout().trimEnd().split("\n\n");
    expect(snapshots.length).toBeGreaterThanOrEqual(3);
    for (const snapshot of snapshots) expect(snapshot).toMatch(/\nkind\s+ready[^]*\n\(total\)\s+2\s+1\s[^]*\nat \S+Z\n1 dead job waits for a person: errand dead list$/);
  }, 120_000);

  it("stats --watch on a terminal redraws in place, in colour, at the terminal's width, until Ctrl-C", async () => {
    // script(1) (util-linux, in every Debian) gives the CLI a real pseudo-terminal.
    const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`;
    const command = ["stty cols 72; exec", ...[process.execPath, errandBin, "stats", "--watch", "0.2", ...db.flags].map(quote)].join(" ");
    // Without CI, NO_COLOR and FORCE_COLOR: Node counts a terminal under `CI` (set by .ci/run)
    // as having no colours, and this is about what a person's terminal shows.
    const { CI: _ci, NO_COLOR: _noColor, FORCE_COLOR: _forceColor, ...env } = process.env;
    const child = spawn("script", ["-qfec", command, "/dev/null"], { cwd: root, env: { ...env, DATABASE_URL: "", COLUMNS: "200" } });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.stdin.on("error", () => {}); // Ctrl-C may race the end of the session
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      await eventually(() => out.split("\u001b[H\u001b[2J").length > 3, 60_000, "three redraws");
      child.stdin.write("\u0003");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
    const screens = out.split("\u001b[H\u001b[2J").slice(1);
    expect(screens.length).toBeGreaterThanOrEqual(3);
    expect(screens[0]).toContain("\u001b[1mkind\u001b[22m");
    for (const line of lines(screens.join("").replace(/\r/g, ""))) expect(Array.from(line).length, line).toBeLessThanOrEqual(72);
  }, 120_000);
});

describe("dead retry and discard with --json", () => {
  it("print the ids they changed as one object", async () => {
    expect(JSON.parse((await cli("dead", "retry", "--kind", "always_fails", "--json")).stdout)).toEqual({ ids: [deadId] });
    expect(JSON.parse((await cli("dead", "discard", "--all", "--json")).stdout)).toEqual({ ids: [] });
  }, 120_000);
});

describe("errand metrics", () => {
  it("binds 127.0.0.1 unless told otherwise", async () => {
    const metrics = spawnErrand("errand metrics", ["metrics", "--port", "0", ...db.flags]);
    try {
      const listening = await metrics.waitForLog((l) => l.event === "metrics_listening", 60_000, "metrics_listening");
      expect(listening).toMatchObject({ host: "127.0.0.1", path: "/metrics" });
      const port = listening.port as number;
      expect(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).toContain('errand_jobs{kind="send_receipt",state="ready"} 1');
      // From this machine's other addresses (where it has any), nothing answers.
      for (const address of Object.values(networkInterfaces()).flat()) {
        if (!address || address.internal || address.family !== "IPv4") continue;
        const refused = await new Promise<string>((resolve) => {
          const socket = connect(port, address.address);
          socket.once("connect", () => {
            socket.destroy();
            resolve("connected");
          });
          socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
        });
        expect(refused, address.address).toBe("ECONNREFUSED");
      }
    } finally {
      metrics.child.kill("SIGTERM");
    }
    expect((await metrics.exited).code).toBe(0);
  }, 120_000);
});
