import { readFileSync, readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const readme = readFileSync(new URL("README.md", root), "utf8");
const examples = readdirSync(new URL("examples/", root)).filter((f) => f.endsWith(".mjs"));

describe("README", () => {
  it("opens with the demo command and the test command", () => {
    const firstBlock = readme.split("```sh\n")[1]!.split("```")[0]!;
    expect(firstBlock).toMatch(/^npm install && npx errand demo/m);
    expect(firstBlock).toMatch(/^npm install && npm test/m);
  });

  it.each(examples)("shows examples/%s verbatim", (file) => {
    expect(readme).toContain(readFileSync(new URL(`examples/${file}`, root), "utf8"));
  });
});
