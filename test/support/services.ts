import { accessSync, constants } from "node:fs";
import pg from "pg";

// What the suite needs beyond Node, found the same way for each: outside CI a missing
// service skips the tests that need it, with one plain line saying so and how to get it;
// under CI (`CI=true`, where .ci/run installs everything) a missing service is a failure.
// vitest.config.ts asks; the tests that use a service read its address from here too.

/** The PostgreSQL server of the suite's PostgreSQL half. */
export const postgresUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** The Chromium the browser tests drive (Debian's; `ERRAND_TEST_CHROMIUM` points elsewhere). */
export const chromiumPath = process.env.ERRAND_TEST_CHROMIUM ?? "/usr/bin/chromium";

/** Why PostgreSQL at `url` cannot be used, or undefined when it answers. */
export async function postgresProblem(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return undefined;
  } catch (error) {
    return `PostgreSQL at ${url} is not reachable (${(error as Error).message})`;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Why the Chromium at `path` cannot be used, or undefined when it is an executable. */
export function chromiumProblem(path: string): string | undefined {
  try {
    accessSync(path, constants.X_OK);
    return undefined;
  } catch {
    return `Chromium not found at ${path}`;
  }
}

/** A service the suite can run without, outside CI. */
export interface Requirement {
  /** Why the service cannot be used, or undefined when it can. */
  readonly problem: string | undefined;
  /** The tests that need it ("the browser tests"). */
  readonly tests: string;
  /** How to get it ("install it with …"). */
  readonly remedy: string;
}

/**
 * The requirements that are missing. Under CI any missing one throws (naming each);
 * otherwise each gets one line through `warn` saying which tests are skipped and how to
 * run them.
 */
export function missing(requirements: readonly Requirement[], ci = process.env.CI === "true", warn: (line: string) => void = console.warn): Requirement[] {
  const absent = requirements.filter((r) => r.problem !== undefined);
  if (ci && absent.length > 0) {
    throw new Error(absent.map((r) => `${r.problem}: under CI ${r.tests} must run, not be skipped; ${r.remedy}`).join("\n"));
  }
  for (const r of absent) warn(`\n*** ${r.problem}: ${r.tests} are SKIPPED; ${r.remedy} to run them. ***\n`);
  return absent;
}

/** The NATS server (with JetStream) of the outbox relay tests. */
export const natsUrl = process.env.ERRAND_TEST_NATS_URL ?? "nats://127.0.0.1:4222";

/** The RabbitMQ server of the outbox relay tests. */
export const amqpUrl = process.env.ERRAND_TEST_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";

/** Why NATS with JetStream at `url` cannot be used, or undefined when it answers. */
export async function natsProblem(url: string): Promise<string | undefined> {
  try {
    const { connect } = await import("@nats-io/transport-node");
    const { jetstreamManager } = await import("@nats-io/jetstream");
    const parsed = new URL(url);
    const nc = await connect({ servers: `${parsed.hostname}:${parsed.port || "4222"}`, timeout: 3_000, reconnect: false });
    try {
      await (await jetstreamManager(nc, { timeout: 3_000 })).getAccountInfo();
    } finally {
      await nc.close();
    }
    return undefined;
  } catch (error) {
    return `NATS with JetStream at ${url} is not reachable (${(error as Error).message})`;
  }
}

/** Why RabbitMQ at `url` cannot be used, or undefined when it answers. */
export async function amqpProblem(url: string): Promise<string | undefined> {
  try {
    const amqp = await import("amqplib");
    const connection = await amqp.connect(url, { timeout: 3_000 });
    await connection.close();
    return undefined;
  } catch (error) {
    return `RabbitMQ at ${url.replace(/:[^:@/]*@/, ":***@")} is not reachable (${(error as Error).message})`;
  }
}
