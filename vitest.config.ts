import { defineConfig } from "vitest/config";
import { type Requirement, amqpProblem, amqpUrl, chromiumPath, chromiumProblem, missing, natsProblem, natsUrl, postgresProblem, postgresUrl } from "./test/support/services.js";

// The suite runs twice: once on the embedded PGlite, once on a real PostgreSQL server; the
// browser tests also need Chromium, the outbox relay tests NATS (JetStream) and RabbitMQ. Without a service the tests that need it are skipped,
// each with one line saying so — except under CI, where a missing service is a failure
// (test/support/services.ts).
interface Services {
  readonly postgres: Requirement;
  readonly chromium: Requirement;
  readonly nats: Requirement;
  readonly amqp: Requirement;
  readonly absent: readonly Requirement[];
}

// Vitest evaluates this file twice (the root, then the projects that extend it): look and
// speak once.
const memo = globalThis as { errandServices?: Promise<Services> };
memo.errandServices ??= (async () => {
  const postgres = {
    problem: await postgresProblem(postgresUrl),
    tests: "the PostgreSQL half of the suite and the browser tests (only PGlite runs)",
    remedy: "start the server or point DATABASE_URL at one",
  };
  const chromium = { problem: chromiumProblem(chromiumPath), tests: "the browser tests", remedy: "install it with `apt-get install -y chromium` (as .ci/run does)" };
  const nats = { problem: await natsProblem(natsUrl), tests: "the JetStream tests (job queue and relay)", remedy: "start nats-server with -js (as .ci/services does) or point ERRAND_TEST_NATS_URL at one" };
  const amqp = { problem: await amqpProblem(amqpUrl), tests: "the RabbitMQ relay tests", remedy: "start rabbitmq-server (as .ci/services does) or point ERRAND_TEST_AMQP_URL at one" };
  return { postgres, chromium, nats, amqp, absent: missing([postgres, chromium, nats, amqp]) };
})();
const { postgres, chromium, nats, amqp, absent } = await memo.errandServices;

// Tests of the CLI's own commands and output, a process per run: where PostgreSQL is here
// they run on it alone (on PGlite each run spends a second or more opening the embedded
// database, several minutes of CI in all). The CLI's way into each database keeps its
// tests on both halves: commands.test.ts (every command, start to end) and config.test.ts
// (--data-dir, --database-url, DATABASE_URL).
const cliOnly = ["test/cli/format.test.ts", "test/cli/limits.test.ts", "test/cli/queues.test.ts", "test/cli/batches.test.ts", "test/observe/cli.test.ts", "test/schedules/cli.test.ts"];

// Most files wait on a database or a child process more than they compute, so three run at
// once (vitest's default on 2 cores is one: the suite took 24 minutes so). These run alone,
// after the rest: worker processes under test; bounds on how long a worker may be held up
// (the JetStream tests' ack waits of a second), which another file's load on the same cores
// must not decide; a connection's cached plans, which the invalidations of other files'
// migrations on the same server reset; and a restart of the shared RabbitMQ, which would
// close every other file's channels.
const aloneOnBoth = ["test/jetstream/**/*.test.ts"];
const alone = [
  ...aloneOnBoth,
  "test/process/**/*.test.ts",
  "test/database/upgrade-under-load.pg.test.ts",
  "test/database/plan-lifetime.pg.test.ts",
  "test/outbox/relay-amqp-restart.pg.test.ts",
];

// The files whose service is missing (skipped outside CI, saying so).
const unserved = [
  ...(absent.includes(chromium) ? ["test/browser/**"] : []),
  ...(absent.includes(nats) ? ["test/**/*nats*"] : []),
  ...(absent.includes(amqp) ? ["test/**/*amqp*"] : []),
];

// What each database's projects share. PGlite's: the data directory each test file copies
// (only that half needs one).
const onPglite = { globalSetup: ["./test/support/global-setup.ts"], env: { ERRAND_TEST_DB: "pglite" } };
const onPostgres = { env: { ERRAND_TEST_DB: "postgres", ERRAND_TEST_URL: postgresUrl } };

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    maxWorkers: 3,
    projects: [
      {
        extends: true,
        test: {
          name: "pglite",
          include: ["test/**/*.test.ts", "src/**/*.test.ts"],
          exclude: [...alone, "test/**/*.pg.test.ts", ...unserved, ...(absent.includes(postgres) ? [] : cliOnly)],
          ...onPglite,
        },
      },
      {
        extends: true,
        test: {
          name: "pglite, alone",
          include: aloneOnBoth,
          exclude: unserved,
          maxWorkers: 1,
          ...onPglite,
        },
      },
      ...(absent.includes(postgres)
        ? []
        : [
            {
              extends: true as const,
              test: {
                name: "postgres",
                include: ["test/**/*.test.ts"],
                // The test command's own test is about this file, not a database: once is enough.
                exclude: [...alone, "test/package/test-command.test.ts", ...unserved],
                ...onPostgres,
              },
            },
            {
              extends: true as const,
              test: {
                name: "postgres, alone",
                include: alone,
                exclude: unserved,
                maxWorkers: 1,
                ...onPostgres,
              },
            },
          ]),
    ],
  },
});
