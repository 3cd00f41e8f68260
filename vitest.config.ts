import { defineConfig } from "vitest/config";
import pg from "pg";

// The suite runs twice: once on the embedded PGlite, once on a real PostgreSQL server.
// Without a reachable server the PostgreSQL half is skipped, loudly — except under CI,
// where a missing server is a failure.
const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

async function postgresReachable(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.end().catch(() => {});
  }
}

const problem = await postgresReachable();
if (problem) {
  const message = `PostgreSQL at ${url} is not reachable (${problem})`;
  if (process.env.CI === "true") throw new Error(`${message}: under CI the PostgreSQL half of the suite is required`);
  console.warn(`\n*** ${message}: the PostgreSQL part of the suite is SKIPPED; only PGlite runs. ***\n`);
}

export default defineConfig({
  test: {
    globalSetup: ["./test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: "pglite", include: ["test/**/*.test.ts", "src/**/*.test.ts"], exclude: ["test/process/**", "test/**/*.pg.test.ts"], env: { ERRAND_TEST_DB: "pglite" } } },
      ...(problem
        ? []
        : [{ extends: true as const, test: { name: "postgres", include: ["test/**/*.test.ts"], env: { ERRAND_TEST_DB: "postgres", ERRAND_TEST_URL: url } } }]),
    ],
  },
});
