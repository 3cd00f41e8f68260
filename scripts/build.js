// `npm run build`: the ESM build (dist/, with the CLI) and the CommonJS build (dist/cjs/,
// the package entries only) for `require("errand")` on Node versions without require(esm).
// dist/ is emptied first so a file deleted from src/ cannot linger in a published tarball.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const root = new URL("../", import.meta.url);
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const compile = (project) => execFileSync(process.execPath, [tsc, "-p", project], { cwd: root, stdio: "inherit" });

rmSync(new URL("dist/", root), { recursive: true, force: true });
compile("tsconfig.build.json");
compile("tsconfig.cjs.json");
// dist/cjs sits inside a "type": "module" package: this marks its .js and .d.ts as CommonJS.
mkdirSync(new URL("dist/cjs/", root), { recursive: true });
writeFileSync(new URL("dist/cjs/package.json", root), `${JSON.stringify({ type: "commonjs" })}\n`);
