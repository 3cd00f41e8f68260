import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type TestErrand, testErrand } from "../support/db.js";
import { assertBuilt, databaseUrl, root } from "../support/process.js";

// A relay whose broker client is not installed: errand's build is copied to a temporary
// directory whose node_modules has every package of this repository except the broker
// clients, so Node's own resolution fails, as in an app that never installed them.
const run = promisify(execFile);
const clients = ["amqplib", "@nats-io/transport-node", "@nats-io/jetstream"];
let app: string;
let t: TestErrand;

beforeAll(async () => {
  assertBuilt();
  t = await testErrand();
  app = mkdtempSync(join(tmpdir(), "errand-no-broker-client-"));
  cpSync(join(root, "dist"), join(app, "dist"), { recursive: true });
  cpSync(join(root, "package.json"), join(app, "package.json"));
  const modules = join(root, "node_modules");
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith(".")) continue;
    if (entry.startsWith("@")) {
      mkdirSync(join(app, "node_modules", entry), { recursive: true });
      for (const member of readdirSync(join(modules, entry))) {
        if (!clients.includes(`${entry}/${member}`)) symlinkSync(join(modules, entry, member), join(app, "node_modules", entry, member));
      }
    } else if (!clients.includes(entry)) {
      mkdirSync(join(app, "node_modules"), { recursive: true });
      symlinkSync(join(modules, entry), join(app, "node_modules", entry));
    }
  }
  writeFileSync(
    join(app, "relay.mjs"),
    `import { Errand } from "./dist/index.js";
const errand = await Errand.open({ connectionString: process.env.URL, schema: process.env.SCHEMA, migrate: false });
try {
  await errand.relay({ to: process.argv[2] }).start();
  console.log(JSON.stringify({ started: true }));
} catch (error) {
  console.log(JSON.stringify({ name: error.name, code: error.code, message: error.message }));
} finally {
  await errand.close();
}
`,
  );
});
afterAll(async () => {
  rmSync(app, { recursive: true, force: true });
  await t?.cleanup();
});

async function relayIn(to: string): Promise<unknown> {
  const { stdout } = await run(process.execPath, [join(app, "relay.mjs"), to], { cwd: app, env: { ...process.env, URL: databaseUrl, SCHEMA: t.schema } });
  return JSON.parse(stdout.trim()) as unknown;
}

it("a relay to RabbitMQ without amqplib installed fails at start with missing_dependency, naming the package", async () => {
  expect(await relayIn("amqp://guest:guest@127.0.0.1:5672")).toEqual({
    name: "ErrandError",
    code: "missing_dependency",
    message: "errand relay --to amqp://… needs the package amqplib, an optional dependency of errand: npm install amqplib",
  });
});

it("a relay to NATS without the NATS client installed fails at start with missing_dependency, naming the package", async () => {
  expect(await relayIn("nats://127.0.0.1:4222")).toEqual({
    name: "ErrandError",
    code: "missing_dependency",
    message: "errand relay --to nats://… needs the package @nats-io/transport-node, an optional dependency of errand: npm install @nats-io/transport-node",
  });
});
