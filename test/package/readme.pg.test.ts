import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";

// The README's examples run as users run them: node, importing the built package by name.
const root = new URL("../../", import.meta.url);
const examples = readdirSync(new URL("examples/", root)).filter((f) => f.endsWith(".mjs"));
const url = process.env.ERRAND_TEST_URL!;

afterAll(async () => {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  await pool.query("DROP SCHEMA IF EXISTS quickstart CASCADE; DROP SCHEMA IF EXISTS shop CASCADE");
  await pool.end();
});

describe("README examples", () => {
  it.each(examples)("%s runs", async (file) => {
    const { stdout } = await promisify(execFile)(process.execPath, [`examples/${file}`], { cwd: root.pathname, env: { ...process.env, DATABASE_URL: url } });
    expect(stdout).toMatch(/is done|order saved, receipt job \d+/);
  });
});
