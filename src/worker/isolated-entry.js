// @ts-check
// Runs one isolated handler (see isolated.ts) in a worker thread or a child process and
// reports how it ended. Plain JavaScript on purpose: threads and child processes load it
// with Node's own loader, from dist/ and from the sources alike, and it imports nothing
// of errand's but its plain-JavaScript JSON check, so it recognises outcomes by their
// cross-realm marks instead of classes.

import { isMainThread, parentPort } from "node:worker_threads";
import { checkedJson } from "./isolated-json.js";

/** @typedef {import("./isolated-protocol.js").IsolatedRequest} IsolatedRequest */
/** @typedef {import("./isolated-protocol.js").FromIsolate} FromIsolate */
/** @typedef {import("./isolated-protocol.js").ToIsolate} ToIsolate */
/** @typedef {import("./isolated-protocol.js").IsolatedReply} IsolatedReply */
/** @typedef {import("./isolated-protocol.js").ThrownValue} ThrownValue */

/** The tag snooze() puts on its value (outcomes.ts): a registered symbol is the same in every realm. */
const outcomeTag = Symbol.for("errand.outcome");

// Requests come one at a time: the parent sends the next only after this one's reply.
/** @type {(message: FromIsolate) => void} */
let send;
if (!isMainThread && parentPort) {
  const port = parentPort;
  send = (message) => port.postMessage(message);
  port.on("message", (message) => receive(/** @type {ToIsolate} */ (message)));
} else if (process.send) {
  const channel = process.send.bind(process);
  send = (message) => void channel(message);
  process.on("message", (message) => receive(/** @type {ToIsolate} */ (message)));
  // The parent is gone: nothing will ask for work again, whatever the module keeps open.
  process.on("disconnect", () => process.exit(0));
} else {
  throw new Error("isolated-entry.js runs handlers for errand's isolated(); it is not a program to start");
}

// An error thrown outside the handler's promise (a callback's throw, an unhandled
// rejection) ends this attempt like a thrown error, not as an anonymous crash.
process.on("uncaughtException", (error) => send({ type: "thrown", error: thrown(error), uncaught: true }));

/** Checkpoints sent to the parent and not yet answered, by their number. */
/** @type {Map<number, { resolve: () => void, reject: (error: unknown) => void }>} */
const checkpoints = new Map();
let nextCheckpoint = 1;

/** @param {ToIsolate} message */
function receive(message) {
  if (message.type === "checkpointed") {
    const waiting = checkpoints.get(message.seq);
    checkpoints.delete(message.seq);
    if (message.error === undefined) waiting?.resolve();
    else waiting?.reject(rebuild(message.error));
    return;
  }
  void run(message).then(send);
}

/**
 * The handler's context: the job's facts, and progress and checkpoint over the channel.
 * `ended()` turns both off once the attempt is over (a stray callback of a finished
 * handler must not report for it), and sends the last unsent progress.
 * @param {IsolatedRequest} request
 */
function contextFor(request) {
  const { id } = request.context;
  /** @type {string | undefined} */
  let progress;
  let scheduled = false;
  let over = false;
  const flush = () => {
    if (progress !== undefined) send({ type: "progress", json: progress });
    progress = undefined;
  };
  const context = {
    ...request.context,
    signal: new AbortController().signal,
    /** @param {unknown} value */
    progress(value) {
      const json = checkedJson(value, request.maxProgressBytes, "progress", "report a figure or a small object, not data");
      if (over) return;
      progress = json;
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        if (!over) flush();
      });
    },
    /** @param {unknown} state */
    checkpoint(state) {
      try {
        // Size and the lease are the parent's to judge; what is not JSON is refused here, by path.
        const json = checkedJson(state, Number.POSITIVE_INFINITY, "checkpoint", "");
        if (over) return Promise.reject(errandError("lease_lost", `job ${id} cannot save its checkpoint: its attempt in this isolate has ended`));
        const seq = nextCheckpoint++;
        return new Promise((resolve, reject) => {
          checkpoints.set(seq, { resolve: () => resolve(undefined), reject });
          send({ type: "checkpoint", seq, json });
        });
      } catch (error) {
        return Promise.reject(error);
      }
    },
    complete() {
      return Promise.reject(errandError(
        "unsupported",
        `job ${id}: ctx.complete(tx) does not work in an isolated handler: its transaction is a connection of this thread or process, and the job's row is the worker's to write. Return from the handler (the worker marks the job done), or run the handler in-process to commit its writes and its completion together`,
      ));
    },
  };
  const ended = () => {
    over = true;
    flush();
    // Checkpoints the handler did not wait for: their answers would go to no one.
    for (const [seq, waiting] of checkpoints) {
      checkpoints.delete(seq);
      waiting.reject(errandError("lease_lost", `job ${id} cannot save its checkpoint: its attempt in this isolate has ended`));
    }
  };
  return { context, ended };
}

/**
 * @param {IsolatedRequest} request
 * @returns {Promise<IsolatedReply>}
 */
async function run(request) {
  const { context, ended } = contextFor(request);
  try {
    return await runHandler(request, context);
  } finally {
    ended();
  }
}

/**
 * @param {IsolatedRequest} request
 * @param {object} context
 * @returns {Promise<IsolatedReply>}
 */
async function runHandler(request, context) {
  try {
    /** @type {Record<string, unknown>} */
    const module = await import(request.module);
    const handler = module[request.export];
    if (typeof handler !== "function") {
      const exports = Object.keys(module).filter((name) => typeof module[name] === "function");
      throw new TypeError(`${request.module} has no function exported as '${request.export}' (function exports: ${exports.join(", ") || "none"})`);
    }
    const value = await handler(request.payload, context);
    if (typeof value === "object" && value !== null && /** @type {Record<symbol, unknown>} */ (value)[outcomeTag] === "snooze") {
      return { type: "snooze", delayMs: Number(/** @type {{ delayMs?: unknown }} */ (value).delayMs) };
    }
    return { type: "result", value: cloneable(value) ? value : undefined };
  } catch (error) {
    return { type: "thrown", error: thrown(error) };
  }
}

/**
 * @param {unknown} error
 * @param {number} depth
 * @returns {ThrownValue}
 */
function thrown(error, depth = 0) {
  if (!(error instanceof Error)) return { kind: "value", value: cloneable(error) ? error : String(error) };
  const code = /** @type {{ code?: unknown }} */ (error).code;
  return {
    kind: "error",
    name: error.name,
    message: error.message,
    stack: error.stack,
    code: typeof code === "string" ? code : undefined,
    // A few levels are enough to explain a failure; a cyclic chain must not loop.
    cause: error.cause === undefined || depth >= 4 ? undefined : thrown(error.cause, depth + 1),
  };
}

/**
 * An ErrandError as this realm can make one (the class cannot be loaded here): an Error
 * with its name and code.
 * @param {string} code
 * @param {string} message
 */
function errandError(code, message) {
  return Object.assign(new Error(message), { name: "ErrandError", code });
}

/**
 * A thrown value from the parent, rebuilt here: an Error with its name, message, code
 * and cause (errand's classes cannot be loaded here: check `error.code`).
 * @param {ThrownValue} value
 * @returns {unknown}
 */
function rebuild(value) {
  if (value.kind === "value") return value.value;
  const error = Object.assign(new Error(value.message, value.cause === undefined ? undefined : { cause: rebuild(value.cause) }), { name: value.name });
  if (value.code !== undefined) Object.assign(error, { code: value.code });
  if (value.field !== undefined) Object.assign(error, { field: value.field });
  return error;
}

/** @param {unknown} value */
function cloneable(value) {
  if (value === undefined || value === null || typeof value !== "object") return typeof value !== "function" && typeof value !== "symbol";
  try {
    structuredClone(value);
    return true;
  } catch {
    return false;
  }
}
