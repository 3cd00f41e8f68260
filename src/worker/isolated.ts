import { fork } from "node:child_process";
import { existsSync } from "node:fs";
import { isAbsolute } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker as Thread } from "node:worker_threads";
import { ErrandError, PermanentError, ValidationError } from "../errors.js";
import { snooze } from "../outcomes.js";
import type { Json } from "../payload.js";
import type { JobContext } from "./handlers.js";
import type { IsolatedReply, IsolatedRequest, ThrownValue } from "./isolated-protocol.js";

/** Plain JavaScript, so it sits beside this file both in src/ and in dist/. */
const entry = new URL("./isolated-entry.js", import.meta.url);

/** Where {@link isolated} runs a handler. */
export type IsolationMode = "thread" | "process";

/** Options of {@link isolated}. */
export interface IsolatedOptions {
  /**
   * `"thread"` (default): a worker thread, about 20–40 ms to start, shares the process's
   * memory limit. `"process"`: a child process (`fork`), about 60–120 ms to start, its
   * own heap, and it survives native crashes of the handler's addons.
   */
  readonly mode?: IsolationMode;
  /** The module's export that holds the handler. Default `"default"`. */
  readonly export?: string;
}

/** A handler that runs elsewhere: what {@link isolated} returns. */
export interface IsolatedHandler<Payload = Json> {
  (payload: Payload, context: JobContext): Promise<unknown>;
  readonly mode: IsolationMode;
  /** Threads or processes of this handler that have not exited yet. */
  readonly running: number;
}

/**
 * Wraps the handler exported by `module` so each job runs in its own worker thread or
 * child process, which errand terminates when the job's signal aborts (lease lost,
 * shutdown deadline) — even a handler that blocks its event loop forever. The result,
 * thrown errors (name, message, stack, code, cause), `PermanentError` and `snooze()` cross
 * back; the signal does not (the thread or process is terminated instead). If it dies
 * (`process.exit`, a crash, out of memory), the attempt fails with the exit code or signal.
 *
 * One thread or process per job, started when the job starts: use it for handlers that
 * may block, not for short ones (measured per-job overhead in the README).
 *
 * @example
 * ```ts
 * const handlers = {
 *   resize: isolated(new URL("./resize.js", import.meta.url)),
 *   transcode: isolated(new URL("./media.js", import.meta.url), { mode: "process", export: "transcode" }),
 * } satisfies Handlers;
 * ```
 */
export function isolated<Payload = Json>(module: URL | string, options: IsolatedOptions = {}): IsolatedHandler<Payload> {
  const href = moduleUrl(module);
  const mode = options.mode ?? "thread";
  if (mode !== "thread" && mode !== "process") throw new ValidationError("mode", `must be "thread" or "process" (got ${JSON.stringify(mode)})`);
  const exportName = options.export ?? "default";
  if (typeof exportName !== "string" || exportName === "") throw new ValidationError("export", "must be the name of an export");
  let running = 0;
  const handler = async (payload: Payload, context: JobContext): Promise<unknown> => {
    const signal = context.signal;
    signal.throwIfAborted();
    const request: IsolatedRequest = {
      module: href,
      export: exportName,
      payload,
      context: {
        id: context.id,
        kind: context.kind,
        attempt: context.attempt,
        maxAttempts: context.maxAttempts,
        idempotencyKey: context.idempotencyKey,
        createdAt: context.createdAt,
      },
    };
    const settled = await new Promise<Settled>((settle) => {
      let ended = false;
      /** Set on abort: the attempt ends once the isolate has really exited. */
      let aborted = false;
      const isolate = (mode === "thread" ? startThread : startProcess)(request, {
        reply(reply) {
          if (ended) return;
          end();
          if (reply.type === "result") settle({ ok: true, value: reply.value });
          else if (reply.type === "snooze") settle({ ok: true, value: snooze(reply.delayMs) });
          else settle({ ok: false, error: fromThrown(reply.error) });
        },
        error(error) {
          if (ended) return;
          end();
          settle({ ok: false, error });
        },
        exit(description) {
          running--;
          if (aborted) settle({ ok: false, error: signal.reason });
          else if (!ended) {
            end();
            settle({ ok: false, error: new ErrandError("isolate_exited", `the ${mode} running ${href} (export '${exportName}') ${description} before the handler finished`) });
          }
        },
      });
      running++;
      const end = () => {
        ended = true;
        signal.removeEventListener("abort", onAbort);
        isolate.kill();
      };
      const onAbort = () => {
        if (ended) return;
        aborted = true;
        end();
      };
      signal.addEventListener("abort", onAbort, { once: true });
    });
    if (!settled.ok) throw settled.error;
    return settled.value;
  };
  return Object.defineProperties(handler, {
    mode: { value: mode, enumerable: true },
    running: { get: () => running, enumerable: true },
  }) as IsolatedHandler<Payload>;
}

/** How an attempt in an isolate came out; thrown values are of any type, so not a rejection. */
type Settled = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

interface IsolateEvents {
  reply(reply: IsolatedReply): void;
  /** The isolate could not be started or sent its request. */
  error(error: unknown): void;
  /** It is gone; `description` says how ("exited with code 3"). Called exactly once. */
  exit(description: string): void;
}

interface Isolate {
  /** Ends it at once, whatever it is doing; `exit` follows. */
  kill(): void;
}

function startThread(request: IsolatedRequest, on: IsolateEvents): Isolate {
  const thread = new Thread(entry, { workerData: request });
  thread.on("message", (reply: IsolatedReply) => on.reply(reply));
  thread.on("error", (error) => on.error(error));
  thread.on("exit", (code) => on.exit(`exited with code ${code}`));
  return { kill: () => void thread.terminate() };
}

function startProcess(request: IsolatedRequest, on: IsolateEvents): Isolate {
  // "advanced" serialisation is the structured clone threads use: Dates and the like
  // cross the same way in both modes.
  const child = fork(fileURLToPath(entry), [], { serialization: "advanced" });
  child.on("message", (reply) => on.reply(reply as IsolatedReply));
  child.on("error", (error) => on.error(error));
  child.on("exit", (code, signal) => on.exit(signal ? `(pid ${child.pid ?? "?"}) was killed by ${signal}` : `(pid ${child.pid ?? "?"}) exited with code ${code ?? "?"}`));
  const failed = (error: unknown) => {
    child.kill("SIGKILL");
    on.error(error);
  };
  try {
    child.send(request, (error) => error && failed(error));
  } catch (error) {
    // A payload that cannot be serialised throws here, before the caller holds the isolate.
    process.nextTick(failed, error);
  }
  return { kill: () => void child.kill("SIGKILL") };
}

/** Rebuilds a thrown value on this side: PermanentError stays one, so no retries are spent. */
function fromThrown(thrown: ThrownValue): unknown {
  if (thrown.kind === "value") return thrown.value;
  const cause = thrown.cause === undefined ? undefined : fromThrown(thrown.cause);
  const options = cause === undefined ? undefined : { cause };
  let error: Error;
  if (thrown.code === "permanent_failure") error = new PermanentError(thrown.message, options);
  else {
    error = new Error(thrown.message, options);
    error.name = thrown.name;
    if (thrown.code !== undefined) Object.assign(error, { code: thrown.code });
  }
  if (thrown.stack !== undefined) error.stack = thrown.stack;
  return error;
}

function moduleUrl(module: URL | string): string {
  let url: URL;
  if (module instanceof URL) url = module;
  else if (typeof module === "string" && isAbsolute(module)) url = pathToFileURL(module);
  else if (typeof module === "string" && module.startsWith("file:")) url = new URL(module);
  else throw new ValidationError("module", "must be a file URL or an absolute path, e.g. new URL(\"./resize.js\", import.meta.url)");
  if (url.protocol !== "file:") throw new ValidationError("module", `must be a file: URL (got ${url.protocol})`);
  if (!existsSync(url)) throw new ValidationError("module", `no such file: ${fileURLToPath(url)}`);
  return url.href;
}
