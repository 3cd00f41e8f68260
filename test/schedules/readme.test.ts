import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Errand } from "../../src/index.js";
import { useTestErrand } from "../support/db.js";

// The README's Schedules example runs as written.
const t = useTestErrand();

function readmeExample(): string {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("\n## Schedules"));
  const match = /```js\n([\s\S]*?)```/.exec(section);
  if (!match) throw new Error("README has no js example under ## Schedules");
  return match[1]!;
}

describe("README: Schedules", () => {
  it("declares, starts a scheduler, lists and stops", async () => {
    const logged: unknown[][] = [];
    const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (errand: Errand, console: unknown) => Promise<void>;
    await new AsyncFunction("errand", "console", readmeExample())(t.errand, { log: (...args: unknown[]) => logged.push(args) });
    const list = await t.errand.schedules.list();
    expect(list.map((s) => [s.name, s.timezone, s.overlap, s.missed])).toEqual([
      ["nightly-report", "Europe/Berlin", "skip", "latest"],
      ["sync-prices", "UTC", "allow", "catch_up"],
    ]);
    expect(logged).toHaveLength(1);
    expect(logged[0]![0]).toBeInstanceOf(Date);
  });
});
