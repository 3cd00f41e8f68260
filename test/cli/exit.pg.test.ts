import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { cliDatabase, errandCli } from "../support/cli.js";

// PostgreSQL only: the embedded database has no pool whose idle connections keep a process alive.
const db = cliDatabase();
afterAll(() => db.cleanup());

describe("a command that fails after connecting", () => {
  it("exits at once: what it opened is closed, not left to the pool's 10-second idle timeout", async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    try {
      const port = (busy.address() as AddressInfo).port;
      const handlers = new URL("../fixtures/handlers.js", import.meta.url).pathname;
      const started = performance.now();
      const result = await errandCli(["worker", "--handlers", handlers, "--metrics-port", String(port), ...db.flags], {}, 30_000);
      const elapsed = performance.now() - started;
      expect(result.stderr).toMatch(/EADDRINUSE/);
      expect(result.code).toBe(1);
      expect(elapsed).toBeLessThan(7_000);
    } finally {
      busy.close();
    }
  });
});
