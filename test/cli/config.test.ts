import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, cliDatabase, errandCli } from "../support/cli.js";
import { onPostgres } from "../support/db.js";
import { errandBin, root, spawnErrand } from "../support/process.js";

// One database for the file; CLI runs are processes and the embedded database serves one
// process at a time, so these run in sequence.
const db = cliDatabase();
afterAll(() => db.cleanup());

// On PostgreSQL the URL gets a password (the test server trusts local connections and
// ignores it), so every test here also checks that it is never printed.
const password = "s3cret-never-printed";
const flags = db.flags.map((flag, i) => {
  if (!onPostgres || db.flags[i - 1] !== "--database-url") return flag;
  const url = new URL(flag);
  if (!url.password) url.password = password;
  return url.href;
});
const cli = (...args: string[]) => errandCli([...args, ...flags]);
const target = flags[flags.indexOf(onPostgres ? "--database-url" : "--data-dir") + 1]!;
/** What the first line must call the database: the URL without user, password or parameters, or the folder. */
const label = onPostgres ? (({ hostname, port, pathname }: URL) => `postgres://${hostname}:${port || "5432"}${pathname}`)(new URL(target)) : `embedded (PGlite) at ${target}`;
const handlers = new URL("../fixtures/handlers.js", import.meta.url).pathname;

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A folder holding `files`, an ES module package that can import "errand" (this build), as an app's would. */
function app(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "errand-config-"));
  dirs.push(dir);
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(root, join(dir, "node_modules", "errand"), "dir");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

/** Runs `errand ARGS` in folder `cwd` (where the worker looks for errand.config.*) to its end. */
function errandIn(cwd: string, args: readonly string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [errandBin, ...args], { cwd, env: { ...process.env, DATABASE_URL: "" }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The README's config example, as the file an app would save it in. */
function readmeConfig(): string {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("\n## One config for the app and the worker"));
  const match = /```js\n(\/\/ errand\.config\.js[\s\S]*?)```/.exec(section);
  if (!match) throw new Error("README has no errand.config.js example under ## One config for the app and the worker");
  return match[1]!;
}

beforeAll(async () => {
  expect((await cli("migrate")).code).toBe(0);
});

describe("errand worker: which database", () => {
  it("with no DATABASE_URL, --database-url or --data-dir, exits 2 at once naming all three, having printed and opened nothing", async () => {
    const started = performance.now();
    const result = await errandCli(["worker", "--handlers", handlers, "--schema", db.schema]);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/^errand: errand worker needs a database: set DATABASE_URL or give --database-url URL for PostgreSQL, or --data-dir DIR to use the embedded database/);
  });

  it("runs the README's config: names its database first (no password), declares the schedules, runs the job, exits 0", async () => {
    const dir = app({
      "errand.config.js": readmeConfig(),
      // The welcome email ends the worker as a deploy would: SIGTERM, a graceful exit.
      "jobs/email.js": "export const sendWelcomeEmail = async () => { setTimeout(() => process.kill(process.pid, 'SIGTERM'), 10); };\n",
      "jobs/avatar.js": "export const resizeAvatar = async () => {};\n",
      "jobs/report.js": "export const sendReport = async () => {};\n",
    });
    const config = join(dir, "errand.config.js");
    expect((await cli("enqueue", "send_welcome_email", '{"userId": 42}')).code).toBe(0);
    const result = await errandCli(["worker", "--config", config, "--verbose", "--poll-interval", "0.1", ...flags], {}, 60_000);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toEqual({ time: expect.any(String), level: "info", event: "starting", database: label, schema: db.schema, config });
    expect(lines).toContainEqual(expect.objectContaining({ event: "schedules_declared", schedules: ["nightly-report"] }));
    expect(lines).toContainEqual(expect.objectContaining({ event: "job_done", kind: "send_welcome_email" }));
    expect(result.stdout).not.toContain(password);
    const listed = await cli("schedules", "list", "--json");
    expect(JSON.parse(listed.stdout.trim())).toEqual([expect.objectContaining({ name: "nightly-report", cron: "0 2 * * *", timezone: "Europe/Berlin", kind: "send_report", payload: { to: "ops@example.com" } })]);
  }, 180_000);

  it("dashboard and metrics name their database and schema in their first line", async () => {
    const dashboard = spawnErrand("errand dashboard", ["dashboard", "--port", "0", ...flags]);
    try {
      await dashboard.waitForLog((l) => /on http:/.test(String(l.text)), 30_000, "the dashboard to listen");
    } finally {
      dashboard.child.kill("SIGTERM");
    }
    expect((await dashboard.exited).code).toBe(0);
    expect(dashboard.logs[0]).toEqual({ text: `errand dashboard: database ${label}, schema ${db.schema}` });

    const metrics = spawnErrand("errand metrics", ["metrics", "--port", "0", "--host", "127.0.0.1", ...flags]);
    try {
      const { port } = await metrics.waitForLog((l) => l.event === "metrics_listening", 30_000, "metrics to listen");
      // An answer also means the command is past setting up its signal handlers.
      expect((await fetch(`http://127.0.0.1:${String(port)}/metrics`)).status).toBe(200);
    } finally {
      metrics.child.kill("SIGTERM");
    }
    expect((await metrics.exited).code).toBe(0);
    expect(metrics.logs[0]).toMatchObject({ event: "starting", database: label, schema: db.schema });
    expect(dashboard.stdout() + dashboard.stderr() + metrics.stdout() + metrics.stderr()).not.toContain(password);
  }, 120_000);
});

describe("errand worker: a config that cannot be used fails at start with exit 2, saying why", () => {
  const typescript = "enum Channel { Email }\nexport default { kinds: { email: { handler: async () => Channel.Email } } };\n";
  const loaderHint = /cannot load \.\/errand\.config\.ts: Node cannot run this TypeScript by itself \(ERR_[A-Z_]+\): run errand under a TypeScript loader, e\.g\. NODE_OPTIONS="--import tsx" npx errand worker … \(npm install -D tsx\), or compile the file to JavaScript/;
  const cases: [string, Record<string, string>, string[], RegExp][] = [
    ["a TypeScript config found by convention, without a loader", { "errand.config.ts": typescript }, [], new RegExp(`^errand: ${loaderHint.source}\n$`)],
    ["a TypeScript config named by --config, without a loader", { "errand.config.ts": typescript }, ["--config", "./errand.config.ts"], new RegExp(`^errand: --config: ${loaderHint.source}\n$`)],
    ["a misspelt field, in ./errand.config.mjs found by convention", { "errand.config.mjs": "export default { kinds: { email: { lease: 1000, handler: async () => {} } } };\n" }, [], /^errand: \.\/errand\.config\.mjs: kinds\.email\.lease: unknown option — did you mean 'leaseMs'\?\n$/],
    ["a bad field through defineConfig", { "app.config.js": 'import { defineConfig } from "errand";\nexport default defineConfig({ worker: { concurency: 5 } });\n' }, ["--config", "app.config.js"], /^errand: --config app\.config\.js: worker\.concurency: unknown option — did you mean 'concurrency'\?\n$/],
    ["no config and no --handlers", {}, [], /^errand: no jobs to run: give --config FILE .* or --handlers FILE, or put errand\.config\.js in /],
    ["a config whose kinds have no handler", { "errand.config.js": "export default { kinds: { email: { maxAttempts: 3 } } };\n" }, [], /^errand: \.\/errand\.config\.js: no kind has a handler/],
    ["a kind with a handler in the config and in --handlers", { "errand.config.js": "export default { kinds: { send_receipt: { handler: async () => {} } } };\n" }, ["--config", "errand.config.js", "--handlers", handlers], /^errand: --handlers: .* and --config errand\.config\.js both have a handler for 'send_receipt': keep one\n$/],
  ];
  it.each(cases)("%s", async (_what, files, args, message) => {
    const result = await errandIn(app(files), ["worker", ...args, ...flags]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toContain(password);
  });
});
