import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The package as a user gets it: `npm pack`, the tarball installed into a fresh app, then
// everything an app does with it — import, require, type-check, bundle, the CLI. It uses
// the built dist/ (`npm test` builds first). PostgreSQL only: it runs once per suite.

const root = fileURLToPath(new URL("../../", import.meta.url));
const rootPackage = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string; devDependencies: Record<string, string> };
const url = process.env.ERRAND_TEST_URL!;
const heavy = ["hono", "@hono/node-server", "prom-client"];
/** The app's tools, at the versions this repository pins (so the npm cache has them). */
const tools = ["typescript", "esbuild", "@types/node"].map((name) => `${name}@${rootPackage.devDependencies[name]}`);

let work: string;
let app: string;
let packed: { filename: string; size: number; unpackedSize: number; files: { path: string }[] };
const schemas: string[] = [];

/** Runs a command in the app; npm's own variables from `npm test` are left out so they cannot redirect it. */
async function sh(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_")));
  return promisify(execFile)(command, args, { cwd: options.cwd ?? app, env: { ...env, ...options.env }, timeout: 90_000, maxBuffer: 16 << 20 });
}

/** Failed commands carry their output: show it instead of only the exit code. */
async function output(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  return sh(command, args, options).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`${command} ${args.join(" ")} failed: ${error.message}\n${error.stdout ?? ""}\n${error.stderr ?? ""}`);
  });
}

function newestMtime(dir: string, keep: (file: string) => boolean): number {
  return Math.max(
    ...readdirSync(dir, { recursive: true, encoding: "utf8" })
      .filter(keep)
      .map((file) => statSync(join(dir, file)).mtimeMs),
  );
}

function bytes(dir: string): number {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .reduce((sum, entry) => sum + statSync(join(entry.parentPath, entry.name)).size, 0);
}

/** The app's job story: open on PostgreSQL, enqueue one job, run it with a worker, print its final status. */
function jobStory(importLine: string, schema: string): string {
  schemas.push(schema);
  return `${importLine}

async function main() {
  const errand = await Errand.open({ connectionString: ${JSON.stringify(url)}, schema: ${JSON.stringify(schema)}, poolSize: 2 });
  try {
    const { id } = await errand.enqueue("add_one", { n: 41 });
    let result;
    const worker = errand.worker({ handlers: { add_one: async ({ n }) => { result = n + 1; } } });
    await worker.start();
    let job = await errand.getJob(id);
    while (job.status !== "done" && job.status !== "dead") {
      await new Promise((resolve) => setTimeout(resolve, 20));
      job = await errand.getJob(id);
    }
    console.log(JSON.stringify({ status: job.status, result }));
  } finally {
    await errand.close();
  }
}
main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
`;
}

/** The app's TypeScript: every entry used, a wrong `db` rejected, nothing public typed `any`. */
const typedApp = (format: "esm" | "cjs") => `import { Errand, type ErrandOptions, type Job, type Worker } from "errand";
import { createDashboard } from "errand/dashboard";
import { startMetricsServer } from "errand/metrics";
import { openTestErrand } from "errand/testing";

type IsAny<T> = 0 extends 1 & T ? true : false;
export const notAny: [IsAny<ErrandOptions["db"]>, IsAny<Job>, IsAny<Worker>, IsAny<Errand>, IsAny<typeof createDashboard>, IsAny<typeof startMetricsServer>, IsAny<typeof openTestErrand>] =
  [false, false, false, false, false, false, false];

export async function enqueueWelcome(url: string): Promise<string> {
  const errand = await Errand.open({ connectionString: url });
  const { id } = await errand.enqueue("send_welcome_email", { userId: 42 });
  await errand.close();
  return id;
}

// @ts-expect-error -- db must be a pg.Pool or a PGlite instance (unused if db were any)
export const wrong = () => Errand.open({ db: "not a pool" });
export const format = "${format}";
`;

beforeAll(async () => {
  const built = statSync(join(root, "dist/index.js")).mtimeMs;
  if (newestMtime(join(root, "src"), (file) => file.endsWith(".ts") && !file.endsWith(".test.ts")) > built) {
    throw new Error("dist/ is older than src/: run `npm run build` first (npm test does)");
  }
  work = mkdtempSync(join(tmpdir(), "errand-package-"));
  app = join(work, "app");
  mkdirSync(join(app, "src"), { recursive: true });

  const { stdout } = await output("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", work], { cwd: root });
  packed = (JSON.parse(stdout) as (typeof packed)[])[0]!;
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "errand-package-app", private: true, type: "module" }));
  await output("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", join(work, packed.filename), ...tools]);

  const modules = join(app, "node_modules");
  const toolBytes = ["typescript", "esbuild", "@esbuild"].reduce((sum, dir) => sum + bytes(join(modules, dir)), 0);
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  console.log(
    `errand ${rootPackage.version}: tarball ${mb(packed.size)}, unpacked ${mb(packed.unpackedSize)} in ${packed.files.length} files; ` +
      `installed with its dependencies ${mb(bytes(modules) - toolBytes)} (of which @electric-sql/pglite ${mb(bytes(join(modules, "@electric-sql")))})`,
  );
}, 180_000);

afterAll(async () => {
  if (work) rmSync(work, { recursive: true, force: true });
  if (schemas.length) {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    await pool.query(schemas.map((schema) => `DROP SCHEMA IF EXISTS "${schema}" CASCADE;`).join(" "));
    await pool.end();
  }
});

describe("the packed package", () => {
  it("holds the build, the license, changelog and readme, and no sources, tests, SQL files or source maps", () => {
    const files = packed.files.map((file) => file.path);
    for (const file of ["LICENSE", "CHANGELOG.md", "README.md", "package.json", "bin/errand.js", "dist/index.js", "dist/index.d.ts", "dist/migrations/001-jobs.js"]) {
      expect(files).toContain(file);
    }
    expect(files.filter((file) => /\.(map|sql|ts)$/.test(file) && !file.endsWith(".d.ts"))).toEqual([]);
    expect(files.filter((file) => /^(src|test|bench|scripts)\//.test(file))).toEqual([]);
    expect(packed.unpackedSize).toBeLessThan(2_000_000);
  });

  it("declares no `any` in its types", () => {
    const dist = join(app, "node_modules/errand/dist");
    const declarations = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".d.ts"));
    expect(declarations.length).toBeGreaterThan(40);
    const withAny = declarations.filter((file) => {
      const code = readFileSync(join(dist, file), "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
      return /\bany\b/.test(code);
    });
    expect(withAny).toEqual([]);
  });

  it('`import "errand"` works without Hono or prom-client; the dashboard and metrics entries are where they load', async () => {
    // A resolve hook makes the heavy packages unresolvable, as if they were not installed.
    writeFileSync(
      join(app, "no-heavy-hook.mjs"),
      `export async function resolve(specifier, context, next) {
  if (${JSON.stringify(heavy)}.some((name) => specifier === name || specifier.startsWith(name + "/"))) throw new Error("unresolvable: " + specifier);
  return next(specifier, context);
}\n`,
    );
    writeFileSync(join(app, "no-heavy.mjs"), `import { register } from "node:module";\nregister("./no-heavy-hook.mjs", import.meta.url);\n`);
    const tryImport = (entry: string) =>
      sh(process.execPath, ["--import", "./no-heavy.mjs", "--input-type=module", "-e", `const m = await import(${JSON.stringify(entry)}); console.log(Object.keys(m).sort().join(","));`]).then(
        ({ stdout }) => stdout.trim(),
        (error: { stderr: string }) => `failed: ${error.stderr.match(/unresolvable: \S+/)?.[0] ?? error.stderr}`,
      );
    const [main, testing, dashboard, metrics] = await Promise.all(["errand", "errand/testing", "errand/dashboard", "errand/metrics"].map(tryImport));
    expect(main).toMatch(/(^|,)Errand,/);
    expect(main).toContain("PermanentError");
    expect(main).not.toContain("createDashboard");
    expect(testing).toContain("openTestErrand");
    expect(dashboard).toBe("failed: unresolvable: hono");
    expect(metrics).toBe("failed: unresolvable: prom-client");

    const { stdout } = await output(process.execPath, ["--input-type=module", "-e", `const [d, m] = await Promise.all([import("errand/dashboard"), import("errand/metrics")]); console.log(typeof d.createDashboard, typeof m.startMetricsServer);`]);
    expect(stdout.trim()).toBe("function function");
  });

  it("a PostgreSQL application runs its jobs without loading PGlite, which only the embedded database and a PGlite `db` load", async () => {
    writeFileSync(
      join(app, "no-pglite-hook.mjs"),
      `export async function resolve(specifier, context, next) {
  if (specifier === "@electric-sql/pglite" || specifier.startsWith("@electric-sql/pglite/")) throw new Error("unresolvable: " + specifier);
  return next(specifier, context);
}\n`,
    );
    writeFileSync(join(app, "no-pglite.mjs"), `import { register } from "node:module";\nregister("./no-pglite-hook.mjs", import.meta.url);\n`);
    writeFileSync(join(app, "run-no-pglite.mjs"), jobStory(`import { Errand } from "errand";`, `package_${randomBytes(4).toString("hex")}_no_pglite`));
    const { stdout } = await output(process.execPath, ["--import", "./no-pglite.mjs", "run-no-pglite.mjs"]);
    expect(JSON.parse(stdout.trim())).toEqual({ status: "done", result: 42 });
    const embedded = await sh(process.execPath, ["--import", "./no-pglite.mjs", "--input-type=module", "-e", `const { Errand } = await import("errand"); await Errand.open({ dataDir: "./no-pglite-data" });`]).then(
      () => "opened",
      (error: { stderr: string }) => error.stderr.match(/unresolvable: \S+/)?.[0] ?? error.stderr,
    );
    expect(embedded).toBe("unresolvable: @electric-sql/pglite");
  });

  it('`require("errand")` works in CommonJS, every entry too, and loads neither Hono nor prom-client', async () => {
    const script = `
const loadedHeavy = () => Object.keys(require.cache).filter((file) => /[\\\\/]node_modules[\\\\/](hono|@hono[\\\\/]node-server|prom-client)[\\\\/]/.test(file)).length;
const main = require("errand");
const afterMain = loadedHeavy();
const testing = require("errand/testing");
const dashboard = require("errand/dashboard");
const metrics = require("errand/metrics");
console.log(JSON.stringify({ errand: typeof main.Errand, permanent: typeof main.PermanentError, afterMain, testing: typeof testing.drain, dashboard: typeof dashboard.createDashboard, metrics: typeof metrics.registerQueueGauges, afterAll: loadedHeavy() }));`;
    const { stdout } = await output(process.execPath, ["-e", script]);
    const result = JSON.parse(stdout) as Record<string, unknown>;
    expect(result).toMatchObject({ errand: "function", permanent: "function", afterMain: 0, testing: "function", dashboard: "function", metrics: "function" });
    expect(result.afterAll).toBeGreaterThan(0);
  });

  it("a CommonJS app runs a job through require()", async () => {
    writeFileSync(join(app, "run.cjs"), jobStory(`const { Errand } = require("errand");`, `package_${randomBytes(4).toString("hex")}_cjs`));
    const { stdout } = await output(process.execPath, ["run.cjs"]);
    expect(JSON.parse(stdout)).toEqual({ status: "done", result: 42 });
  });

  it("type-checks under nodenext (ESM and CommonJS files) and bundler, with no @types/pg of the app's own; a wrong db is an error", async () => {
    expect(JSON.parse(readFileSync(join(app, "package.json"), "utf8")).dependencies).not.toHaveProperty("@types/pg");
    writeFileSync(join(app, "src/app.ts"), typedApp("esm"));
    writeFileSync(join(app, "src/app.cts"), typedApp("cjs"));
    const config = (module: string, moduleResolution: string, files: string[], skipLibCheck = false) =>
      JSON.stringify({ compilerOptions: { module, moduleResolution, target: "es2022", strict: true, noEmit: true, skipLibCheck, types: ["node"] }, files });
    writeFileSync(join(app, "tsconfig.nodenext.json"), config("nodenext", "nodenext", ["src/app.ts", "src/app.cts"]));
    writeFileSync(join(app, "tsconfig.bundler.json"), config("preserve", "bundler", ["src/app.ts"]));
    // The @ts-expect-error is not vacuous: without it, the wrong db is reported.
    writeFileSync(join(app, "src/wrong.ts"), `import { Errand } from "errand";\nexport const wrong = () => Errand.open({ db: "not a pool" });\n`);
    writeFileSync(join(app, "tsconfig.wrong.json"), config("nodenext", "nodenext", ["src/wrong.ts"], true));
    const check = (project: string) =>
      sh(process.execPath, ["node_modules/typescript/bin/tsc", "-p", project, "--listFiles"]).then(
        ({ stdout }) => stdout,
        (error: { stdout: string }) => error.stdout,
      );
    // Only errors in the app or in errand's declarations count: PGlite's own .d.ts need
    // @types/emscripten, which it does not declare (apps with skipLibCheck never see it).
    const ours = (result: string) => result.split("\n").filter((line) => line.startsWith("src/") || line.startsWith("node_modules/errand/"));
    const [nodenext, bundler, wrong] = await Promise.all(["tsconfig.nodenext.json", "tsconfig.bundler.json", "tsconfig.wrong.json"].map(check));
    expect(ours(nodenext!)).toEqual([]);
    expect(ours(bundler!)).toEqual([]);
    // It did check the app against errand's declarations (the .cts file's require() reads
    // the same ones: TypeScript, like Node ≥ 20.19, resolves require of an ES module) and
    // pg's types from errand's own dependency.
    expect(nodenext).toContain(`${app}/node_modules/errand/dist/index.d.ts`);
    expect(nodenext).toContain(`${app}/node_modules/@types/pg/index.d.ts`);
    expect(bundler).toContain(`${app}/node_modules/errand/dist/index.d.ts`);
    expect(ours(wrong!)).toEqual([expect.stringMatching(/^src\/wrong\.ts\(2,\d+\): error TS2322: Type 'string' is not assignable to type 'Pool \| PGlite \| undefined'/)]);
  }, 180_000);

  it.each(["cjs", "esm"])("an esbuild bundle (%s) migrates, enqueues and runs a job to done", async (format) => {
    writeFileSync(join(app, `src/bundle-${format}.js`), jobStory(`import { Errand } from "errand";`, `package_${randomBytes(4).toString("hex")}_${format}`));
    const outfile = `out/bundle.${format === "esm" ? "mjs" : "cjs"}`;
    // pg is CommonJS: an ESM bundle needs a `require` for its Node built-ins (esbuild's usual banner).
    const banner = format === "esm" ? [`--banner:js=import { createRequire } from "node:module"; const require = createRequire(import.meta.url);`] : [];
    await output(join(app, "node_modules/.bin/esbuild"), [`src/bundle-${format}.js`, "--bundle", "--platform=node", `--format=${format}`, `--outfile=${outfile}`, "--external:@electric-sql/pglite", "--log-level=warning", ...banner]);
    // The bundle holds errand's code, migrations included; nothing is read from node_modules/errand.
    expect(readFileSync(join(app, outfile), "utf8")).toContain("CREATE TABLE {{schema}}.jobs");
    const { stdout } = await output(process.execPath, [outfile]);
    expect(JSON.parse(stdout)).toEqual({ status: "done", result: 42 });
  });

  it("`npx errand --help` lists the commands", async () => {
    const { stdout } = await output("npx", ["--no-install", "errand", "--help"]);
    expect(stdout).toMatch(/^Usage: errand/m);
    for (const command of ["migrate", "worker", "demo", "dashboard"]) expect(stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
  });
});
