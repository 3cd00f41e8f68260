import { existsSync } from "node:fs";
import { isAbsolute } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { maxProgressBytes } from "../defaults.js";
import { ErrandError, PermanentError, ValidationError } from "../errors.js";
import { snooze } from "../outcomes.js";
import type { Json } from "../payload.js";
import type { JobContext } from "./handlers.js";
import { Isolate, type IsolateJob, type IsolationMode } from "./isolate.js";
import type { IsolatedRequest, ThrownValue } from "./isolated-protocol.js";

export type { IsolationMode } from "./isolate.js";

/** Options of {@link isolated}. */
export interface IsolatedOptions {
  /**
   * `"thread"` (default): a worker thread, cheaper to start, sharing the process's memory
   * limit. `"process"`: a child process (`fork`) with its own heap, which also contains
   * native crashes of the handler's addons.
   */
  readonly mode?: IsolationMode;
  /** The module's export that holds the handler. Default `"default"`. */
  readonly export?: string;
  /**
   * Threads or processes kept after a job for the next one. Default 0: every job starts
   * a fresh one, so nothing a job leaves behind (globals, leaks, timers) reaches the next.
   * Reuse saves the start (tens of ms for a thread, about a hundred for a process).
   */
  readonly idle?: number;
}

/** A handler that runs elsewhere: what {@link isolated} returns. */
export interface IsolatedHandler<Payload = Json> {
  (payload: Payload, context: JobContext): Promise<unknown>;
  readonly mode: IsolationMode;
  /** Threads or processes of this handler alive now (running a job, or idle). */
  readonly running: number;
  /** Ends the idle threads or processes and keeps none from now on; running jobs are not affected. */
  close(): Promise<void>;
}

/** How an attempt in an isolate came out; thrown values are of any type, so not a rejection. */
type Settled = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/**
 * Wraps the handler exported by `module` so it runs in a worker thread or a child
 * process, which errand terminates when the job's signal aborts (lease lost, shutdown
 * deadline) — even a handler that blocks its event loop forever, which would otherwise
 * stall every job, heartbeat and timer of the worker. The payload and the job's context
 * (without `signal`: the isolate is terminated instead) cross by structured clone; the
 * result, thrown errors (name, message, stack, code, cause), `PermanentError` and
 * `snooze()` cross back. `ctx.progress(value)`, `ctx.checkpoint(state)` and
 * `ctx.lastCheckpoint` work as in-process, over messages: progress is checked in the
 * isolate (a bad value throws there at once) and coalesced; a checkpoint resolves once the
 * worker has written it, or rejects as the in-process one would (errand's error classes
 * cannot cross, so check `error.code`). `ctx.complete(tx)` rejects with `unsupported`. A thread or process that dies (`process.exit`, a crash, out of
 * memory) fails the attempt with an `isolate_exited` error naming the exit code or signal.
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
  let keep = options.idle ?? 0;
  if (!Number.isSafeInteger(keep) || keep < 0) throw new ValidationError("idle", `must be an integer ≥ 0 (got ${JSON.stringify(keep)})`);
  const idle: Isolate[] = [];
  let alive = 0;
  const gone = (isolate: Isolate) => {
    alive--;
    const at = idle.indexOf(isolate);
    if (at >= 0) idle.splice(at, 1);
  };
  const take = (): Isolate => {
    const reused = idle.pop();
    if (reused) return reused;
    const isolate = new Isolate(mode, gone);
    alive++;
    return isolate;
  };
  const exitError = (description: string) =>
    new ErrandError("isolate_exited", `the ${mode} running ${href} (export '${exportName}') ${description} before the handler finished`);

  const handler = async (payload: Payload, context: JobContext): Promise<unknown> => {
    const signal = context.signal;
    signal.throwIfAborted();
    const request: IsolatedRequest = {
      type: "run",
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
        lastCheckpoint: context.lastCheckpoint,
      },
      maxProgressBytes,
    };
    const settled = await new Promise<Settled>((settle) => {
      const isolate = take();
      /** Set on abort: the attempt ends once the isolate has really exited. */
      let aborted = false;
      const onAbort = () => {
        aborted = true;
        isolate.kill();
      };
      const finish = (outcome: Settled, reusable: boolean) => {
        signal.removeEventListener("abort", onAbort);
        isolate.job = undefined;
        if (reusable && idle.length < keep) {
          isolate.idle();
          idle.push(isolate);
        } else isolate.kill();
        settle(outcome);
      };
      const job: IsolateJob = {
        reply(reply) {
          if (aborted) return;
          if (reply.type === "progress") report(context, reply.json);
          else if (reply.type === "checkpoint") {
            const answer = (error?: unknown) => {
              if (isolate.job === job) isolate.answer(error === undefined ? { type: "checkpointed", seq: reply.seq } : { type: "checkpointed", seq: reply.seq, error: toThrown(error) });
            };
            context.checkpoint(JSON.parse(reply.json) as Json).then(() => answer(), answer);
          } else if (reply.type === "result") finish({ ok: true, value: reply.value }, true);
          else if (reply.type === "snooze") finish({ ok: true, value: snooze(reply.delayMs) }, true);
          else finish({ ok: false, error: fromThrown(reply.error) }, reply.uncaught !== true);
        },
        error(error) {
          if (!aborted) finish({ ok: false, error }, false);
        },
        exit(description) {
          signal.removeEventListener("abort", onAbort);
          settle({ ok: false, error: aborted ? signal.reason : exitError(description) });
        },
      };
      isolate.job = job;
      signal.addEventListener("abort", onAbort, { once: true });
      isolate.busy();
      isolate.send(request);
    });
    if (!settled.ok) throw settled.error;
    return settled.value;
  };

  const close = async (): Promise<void> => {
    keep = 0;
    const closing = idle.splice(0);
    for (const isolate of closing) isolate.kill();
    await Promise.all(closing.map((isolate) => isolate.exited));
  };
  return Object.defineProperties(handler, {
    mode: { value: mode, enumerable: true },
    running: { get: () => alive, enumerable: true },
    close: { value: close },
  }) as IsolatedHandler<Payload>;
}

/**
 * Passes a progress report on to the job's context. The isolate checked it as the
 * in-process ctx.progress does, so this does not throw; should it, the report is dropped
 * rather than failing a run whose handler was told it was fine.
 */
function report(context: JobContext, json: string): void {
  try {
    context.progress(JSON.parse(json) as Json);
  } catch {
    // See above.
  }
}

/** A value thrown on this side as it crosses to the isolate (a checkpoint refused). */
function toThrown(error: unknown, depth = 0): ThrownValue {
  if (!(error instanceof Error)) return { kind: "value", value: typeof error === "string" || typeof error === "number" ? error : String(error) };
  const code = (error as { code?: unknown }).code;
  return {
    kind: "error",
    name: error.name,
    message: error.message,
    stack: undefined,
    code: typeof code === "string" ? code : undefined,
    ...(error instanceof ValidationError ? { field: error.field } : {}),
    cause: error.cause === undefined || depth >= 4 ? undefined : toThrown(error.cause, depth + 1),
  };
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
