import { execFile } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { promisify } from "node:util";
import { transform } from "esbuild";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";

// The README's examples run as users run them: node, importing the built package by name.
// A TypeScript example runs with its types stripped (as tsx would), from the repository's
// root so that "errand" still names this package.
const root = new URL("../../", import.meta.url);
const examples = readdirSync(new URL("examples/", root)).filter((f) => f.endsWith(".mjs") || f.endsWith(".ts"));
const url = process.env.ERRAND_TEST_URL!;

afterAll(async () => {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  await pool.query("DROP SCHEMA IF EXISTS quickstart CASCADE; DROP SCHEMA IF EXISTS shop CASCADE");
  await pool.end();
});

describe("README examples", () => {
  it.each(examples)("%s runs", async (file) => {
    const args = file.endsWith(".ts")
      ? ["--input-type=module", "--eval", (await transform(readFileSync(new URL(`examples/${file}`, root), "utf8"), { loader: "ts", format: "esm" })).code]
      : [`examples/${file}`];
    const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: root.pathname, env: { ...process.env, DATABASE_URL: url } });
    expect(stdout).toMatch(/is done|order saved, receipt job \d+/);
  });
});
