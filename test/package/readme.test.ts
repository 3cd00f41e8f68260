import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const readme = readFileSync(new URL("README.md", root), "utf8");
const examples = readdirSync(new URL("examples/", root)).filter((f) => f.endsWith(".mjs") || f.endsWith(".ts"));

describe("README", () => {
  it("opens with the demo command and the test command", () => {
    const firstBlock = readme.split("```sh\n")[1]!.split("```")[0]!;
    expect(firstBlock).toMatch(/^npm install && npx errand demo/m);
    expect(firstBlock).toMatch(/^npm install && npm test/m);
  });

  it.each(examples)("shows examples/%s verbatim", (file) => {
    expect(readme).toContain(readFileSync(new URL(`examples/${file}`, root), "utf8"));
  });

  it("type-checks every ```ts block against the source, its @ts-expect-error lines included", () => {
    const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    expect(blocks.join("\n")).toContain("@ts-expect-error");
    // Each block is its own ES module beside the repository's package.json, so "zod" and
    // node's types resolve as in an app; "errand" is mapped to the source, not the build.
    const files = new Map(blocks.map((code, i) => [fileURLToPath(new URL(`readme-block-${i + 1}.mts`, root)), code]));
    const options = compilerOptions();
    const base = ts.createCompilerHost(options);
    const host: ts.CompilerHost = {
      ...base,
      fileExists: (name) => files.has(name) || base.fileExists(name),
      readFile: (name) => files.get(name) ?? base.readFile(name),
      getSourceFile: (name, language, ...rest) => {
        const code = files.get(name);
        return code === undefined ? base.getSourceFile(name, language, ...rest) : ts.createSourceFile(name, code, language);
      },
    };
    const program = ts.createProgram([...files.keys()], options, host);
    const problems = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file ? `${d.file.fileName.replace(fileURLToPath(root), "")}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : "";
      return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
    });
    expect(problems).toEqual([]);
  });
});

/** tsconfig.json's options (strict, NodeNext, …), with `errand` and its entry points mapped to src/. */
function compilerOptions(): ts.CompilerOptions {
  const dir = fileURLToPath(root);
  const { config } = ts.readConfigFile(`${dir}tsconfig.json`, (path) => ts.sys.readFile(path)) as { config: unknown };
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, dir);
  const entry = (path: string) => [`${dir}src/${path}`];
  return {
    ...options,
    noEmit: true,
    declaration: false,
    sourceMap: false,
    allowJs: false,
    paths: { errand: entry("index.ts"), "errand/testing": entry("testing/index.ts"), "errand/dashboard": entry("dashboard/index.ts"), "errand/metrics": entry("metrics.ts") },
  };
}
