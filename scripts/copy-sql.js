// tsc only emits .js: copy the migration files next to the compiled migrator.
import { cpSync, mkdirSync, readdirSync } from "node:fs";

const from = new URL("../src/migrations/", import.meta.url);
const to = new URL("../dist/migrations/", import.meta.url);
mkdirSync(to, { recursive: true });
for (const file of readdirSync(from)) {
  if (file.endsWith(".sql")) cpSync(new URL(file, from), new URL(file, to));
}
