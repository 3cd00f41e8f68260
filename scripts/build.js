// `npm run build`: dist/ emptied first, so a file deleted from src/ cannot linger in a
// published tarball, then tsc. One ESM build serves `import` and `require` alike: Node
// ≥ 20.19 (package.json `engines`) loads ES modules through `require()`.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createRequire } from "node:module";

const root = new URL("../", import.meta.url);
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
rmSync(new URL("dist/", root), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
