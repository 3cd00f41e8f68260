// @ts-check
// Runs one isolated handler (see isolated.ts) in a worker thread or a child process and
// reports how it ended. Plain JavaScript on purpose: threads and child processes load it
// with Node's own loader, from dist/ and from the sources alike, and it imports nothing
// of errand's, so it recognises outcomes by their cross-realm marks instead of classes.

import { isMainThread, parentPort } from "node:worker_threads";

/** @typedef {import("./isolated-protocol.js").IsolatedRequest} IsolatedRequest */
/** @typedef {import("./isolated-protocol.js").IsolatedReply} IsolatedReply */
/** @typedef {import("./isolated-protocol.js").ThrownValue} ThrownValue */

/** The tag snooze() puts on its value (outcomes.ts): a registered symbol is the same in every realm. */
const outcomeTag = Symbol.for("errand.outcome");

// Requests come one at a time: the parent sends the next only after this one's reply.
/** @type {(reply: IsolatedReply) => void} */
let send;
if (!isMainThread && parentPort) {
  const port = parentPort;
  send = (reply) => port.postMessage(reply);
  port.on("message", (request) => void run(/** @type {IsolatedRequest} */ (request)).then(send));
} else if (process.send) {
  const channel = process.send.bind(process);
  send = (reply) => void channel(reply);
  process.on("message", (request) => void run(/** @type {IsolatedRequest} */ (request)).then(send));
  // The parent is gone: nothing will ask for work again, whatever the module keeps open.
  process.on("disconnect", () => process.exit(0));
} else {
  throw new Error("isolated-entry.js runs handlers for errand's isolated(); it is not a program to start");
}

// An error thrown outside the handler's promise (a callback's throw, an unhandled
// rejection) ends this attempt like a thrown error, not as an anonymous crash.
process.on("uncaughtException", (error) => send({ type: "thrown", error: thrown(error), uncaught: true }));

/**
 * @param {IsolatedRequest} request
 * @returns {Promise<IsolatedReply>}
 */
async function run(request) {
  try {
    /** @type {Record<string, unknown>} */
    const module = await import(request.module);
    const handler = module[request.export];
    if (typeof handler !== "function") {
      const exports = Object.keys(module).filter((name) => typeof module[name] === "function");
      throw new TypeError(`${request.module} has no function exported as '${request.export}' (function exports: ${exports.join(", ") || "none"})`);
    }
    const context = { ...request.context, signal: new AbortController().signal };
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
