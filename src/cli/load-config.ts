import { existsSync } from "node:fs";
import { extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { InvalidArgumentError } from "commander";
import { type ErrandConfig, defineConfig, handlersOf } from "../config.js";
import type { Handler, Handlers } from "../worker/handlers.js";

/** The config files `errand worker` looks for in the current folder, in this order (compiled JavaScript first). */
export const conventionalConfigs = ["errand.config.js", "errand.config.mjs", "errand.config.cjs", "errand.config.ts", "errand.config.mts"] as const;

/** A module to load: its path as the user wrote it, and the flag that named it (none when found by convention). */
interface Source {
  readonly path: string;
  readonly flag?: "--config" | "--handlers";
}

/** Where a worker's jobs are described: a config module, a handlers module, or both. */
export interface AppSources {
  readonly config?: Source;
  readonly handlers?: Source;
}

/** The flags' modules; with neither flag, the first conventional config file in the current folder. */
export function findSources(flags: { readonly config?: string; readonly handlers?: string }): AppSources {
  if (flags.config !== undefined || flags.handlers !== undefined) {
    return {
      ...(flags.config !== undefined ? { config: { path: flags.config, flag: "--config" as const } } : {}),
      ...(flags.handlers !== undefined ? { handlers: { path: flags.handlers, flag: "--handlers" as const } } : {}),
    };
  }
  const found = conventionalConfigs.find((name) => existsSync(name));
  if (found === undefined) {
    throw new InvalidArgumentError(
      `no jobs to run: give --config FILE (a module whose default export is defineConfig({ kinds: { <kind>: { handler, … } } })) or --handlers FILE, or put ${conventionalConfigs[0]} in ${process.cwd()}`,
    );
  }
  return { config: { path: `./${found}` } };
}

/** Absolute paths of the sources, for the worker's first log line. */
export function sourcePaths(sources: AppSources): { config?: string; handlers?: string } {
  return {
    ...(sources.config ? { config: resolve(sources.config.path) } : {}),
    ...(sources.handlers ? { handlers: resolve(sources.handlers.path) } : {}),
  };
}

/**
 * Loads the config and the handlers module (either may be absent) into one config and one
 * handler map. A kind with a handler in both is refused: which one runs would be a guess.
 */
export async function loadSources(sources: AppSources): Promise<{ config: Required<ErrandConfig>; handlers: Handlers }> {
  const config = sources.config ? await loadConfig(sources.config) : defineConfig({});
  const handlers: Record<string, Handler<never>> = { ...handlersOf(config) };
  if (sources.handlers) {
    for (const [kind, handler] of Object.entries(await loadHandlers(sources.handlers))) {
      if (kind in handlers) throw new InvalidArgumentError(`--handlers: ${sources.handlers.path} and ${named(sources.config!)} both have a handler for '${kind}': keep one`);
      handlers[kind] = handler;
    }
  }
  if (Object.keys(handlers).length === 0) {
    throw new InvalidArgumentError(`${named((sources.config ?? sources.handlers)!)}: no kind has a handler: give each kind the worker runs one, e.g. { kinds: { send_email: { handler: sendEmail } } }`);
  }
  return { config, handlers };
}

async function loadConfig(source: Source): Promise<Required<ErrandConfig>> {
  const exported = await importDefault(source);
  if (exported === undefined) throw new InvalidArgumentError(`${named(source)}: the module has no default export: end it with export default defineConfig({ kinds: { … } })`);
  try {
    return defineConfig(exported as ErrandConfig);
  } catch (error) {
    throw explain(error, source);
  }
}

async function loadHandlers(source: Source): Promise<Handlers> {
  const handlers = await importDefault(source);
  if (typeof handlers !== "object" || handlers === null) throw new InvalidArgumentError(`--handlers: ${source.path} has no default export mapping kind → handler`);
  for (const [kind, handler] of Object.entries(handlers)) {
    if (typeof handler !== "function") throw new InvalidArgumentError(`--handlers: ${source.path}: the handler for '${kind}' is not a function`);
  }
  return handlers as Handlers;
}

async function importDefault(source: Source): Promise<unknown> {
  try {
    return ((await import(pathToFileURL(resolve(source.path)).href)) as { default?: unknown }).default;
  } catch (error) {
    throw explain(error, source);
  }
}

/** Errors Node raises for a TypeScript file it cannot run: no loader, or syntax its type stripping does not handle. */
const typescriptCodes = ["ERR_UNKNOWN_FILE_EXTENSION", "ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX", "ERR_INVALID_TYPESCRIPT_SYNTAX", "ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING"];

/** A loading error as one line that says what to do; bad config fields keep their name. */
function explain(error: unknown, source: Source): InvalidArgumentError {
  const message = error instanceof Error ? error.message : String(error);
  // Compared by name: the config module may import its own copy of errand.
  if (error instanceof Error && error.name === "ValidationError") return new InvalidArgumentError(`${named(source)}: ${message}`);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && typescriptCodes.includes(code) && (/^\.[cm]?tsx?$/.test(extname(source.path)) || /\.[cm]?tsx?\b/.test(message))) {
    return new InvalidArgumentError(
      `${source.flag ? `${source.flag}: ` : ""}cannot load ${source.path}: Node cannot run this TypeScript by itself (${code}): run errand under a TypeScript loader, ` +
        `e.g. NODE_OPTIONS="--import tsx" npx errand worker … (npm install -D tsx), or compile the file to JavaScript`,
    );
  }
  return new InvalidArgumentError(`${source.flag ? `${source.flag}: ` : ""}cannot load ${source.path}: ${message}`);
}

/** The module as messages name it: `--config ./app.config.js`, or just its path when found by convention. */
function named(source: Source): string {
  return source.flag ? `${source.flag} ${source.path}` : source.path;
}
