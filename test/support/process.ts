import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (process tests run the built CLI from here). */
export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The PostgreSQL server the process tests use. */
export const databaseUrl = process.env.ERRAND_TEST_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** The CLI as users run it (the built package). */
export const errandBin = join(root, "bin", "errand.js");

/** Path of a handler module under `test/process/fixtures/`. */
export function fixture(name: string): string {
  return join(root, "test", "process", "fixtures", name);
}

/** `databaseUrl` with an `application_name`, so a test can find (and terminate) exactly these backends. */
export function urlNamed(applicationName: string, url = databaseUrl): string {
  return `${url}${url.includes("?") ? "&" : "?"}application_name=${encodeURIComponent(applicationName)}`;
}

/** One JSON log line the worker printed. */
export type LogRecord = Record<string, unknown> & { readonly event?: string; readonly level?: string };

/** How a spawned process ended. */
export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A running `node bin/errand.js …` (or any node script) and what it printed. */
export interface Spawned {
  readonly name: string;
  readonly child: ChildProcess;
  /** stdout lines parsed as JSON (non-JSON lines are kept as `{ text }`). */
  readonly logs: LogRecord[];
  /** Everything written to stdout. */
  readonly stdout: () => string;
  /** Everything written to stderr. */
  readonly stderr: () => string;
  /** Resolves once the process has exited and its output is read (never rejects). */
  readonly exited: Promise<Exit>;
  /** True once the process has exited. */
  readonly hasExited: () => boolean;
  /** Resolves with the first log record (past or future) matching `match`. */
  waitForLog(match: (record: LogRecord) => boolean, timeoutMs?: number, what?: string): Promise<LogRecord>;
  /** Sends `signal` and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<Exit>;
}

/** Options for {@link spawnWorker}. */
export interface WorkerSpawn {
  /** A label for logs and for the handlers (env `WORKER_NAME`). */
  readonly name: string;
  /** The schema errand's tables live in. */
  readonly schema: string;
  /** Handler module path (see {@link fixture}). */
  readonly handlers: string;
  /** Extra CLI flags, e.g. `["--lease", "2"]`. */
  readonly args?: readonly string[];
  /** Extra environment for the handlers. */
  readonly env?: Readonly<Record<string, string>>;
  /** The worker's database URL (default: {@link databaseUrl} named `errand-<name>-<schema>`, unique to the test). */
  readonly url?: string;
}

/** Throws a clear error when `dist/` is missing: process tests run the built CLI. */
export function assertBuilt(): void {
  if (!existsSync(join(root, "dist", "cli", "main.js"))) throw new Error("dist/ is missing: run `npm run build` before the process tests");
}

/** Starts `errand ARGS` (the built CLI) with `env` added; `DATABASE_URL` is cleared unless given. */
export function spawnErrand(name: string, args: readonly string[], env: Readonly<Record<string, string>> = {}): Spawned {
  assertBuilt();
  return spawnNode(name, [errandBin, ...args], env);
}

/** Starts `errand worker` against the test database. */
export function spawnWorker(options: WorkerSpawn): Spawned {
  const args = [
    "worker",
    "--database-url",
    options.url ?? urlNamed(`errand-${options.name}-${options.schema}`),
    "--schema",
    options.schema,
    "--handlers",
    options.handlers,
    ...(options.args ?? []),
  ];
  return spawnErrand(options.name, args, {
    EFFECTS_URL: urlNamed("errand-test-effects"),
    EFFECTS_SCHEMA: options.schema,
    WORKER_NAME: options.name,
    ...options.env,
  });
}

/** Starts `node <args>` with `env` added, collecting its output. */
export function spawnNode(name: string, args: readonly string[], env: Readonly<Record<string, string>> = {}): Spawned {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, DATABASE_URL: "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const logs: LogRecord[] = [];
  const waiters = new Set<() => void>();
  let stdout = "";
  let stderr = "";
  let pending = "";
  let exit: Exit | undefined;
  const parse = (line: string) => {
    if (!line.trim()) return;
    try {
      logs.push(JSON.parse(line) as LogRecord);
    } catch {
      logs.push({ text: line });
    }
  };
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop()!;
    lines.forEach(parse);
    for (const waiter of waiters) waiter();
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  // "close", not "exit": by then everything the process wrote has been read.
  const exited = new Promise<Exit>((resolve) =>
    child.on("close", (code, signal) => {
      parse(pending);
      exit = { code, signal };
      resolve(exit);
      for (const waiter of waiters) waiter();
    }),
  );
  const self: Spawned = {
    name,
    child,
    logs,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    hasExited: () => exit !== undefined,
    waitForLog(match, timeoutMs = 15_000, what = "a log line") {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = logs.find(match);
          if (found) return finish(() => resolve(found));
          if (exit) finish(() => reject(new Error(`${name} exited (${JSON.stringify(exit)}) before ${what}; stderr: ${stderr.slice(-2000)}`)));
        };
        const timer = setTimeout(() => finish(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} from ${name}; stderr: ${stderr.slice(-2000)}`))), timeoutMs);
        const finish = (then: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          then();
        };
        waiters.add(check);
        check();
      });
    },
    async kill(signal = "SIGKILL") {
      if (!exit) child.kill(signal);
      return exited;
    },
  };
  return self;
}

/** Stops every process still running (test cleanup): SIGKILL, then waits. */
export async function killAll(processes: Iterable<Spawned>): Promise<void> {
  await Promise.all([...processes].map((p) => p.kill("SIGKILL")));
}
