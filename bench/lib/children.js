// Starts bench/child.js processes and talks to them over IPC.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { sleep } from "./common.js";

const childPath = fileURLToPath(new URL("../child.js", import.meta.url));

/** Starts one child for `task`; resolves to a handle once it is running. */
export function spawnChild(task) {
  // BENCH_NODE_OPTIONS passes flags to the children only (e.g. --cpu-prof for a profile).
  const execArgv = process.env.BENCH_NODE_OPTIONS?.split(" ").filter(Boolean) ?? [];
  // task.env: extra environment for this child only (e.g. BENCH_ERRAND_URL naming its connections).
  const env = task.env ? { ...process.env, ...task.env } : process.env;
  const child = fork(childPath, [JSON.stringify(task)], { stdio: ["ignore", "inherit", "inherit", "ipc"], execArgv, env });
  const handle = { child, count: 0, ready: undefined, result: undefined };
  let exitCode;
  // "close", not "exit": it comes once the IPC channel has closed too, so the last message
  // (the result) has been read. "exit" can come first: 1 of 50 idle workers stopping at
  // once looked as if it had exited without its result (exit code 0).
  const exited = new Promise((resolve) => child.on("close", (code) => resolve((exitCode = code))));
  child.on("message", (m) => {
    if (m.type === "progress") handle.count = m.count;
    else if (m.type === "warm") handle.warm = true;
    else if (m.type === "ready") handle.ready = m;
    else if (m.type === "result") handle.result = m;
  });
  const waitFor = async (what, timeoutMs) => {
    const deadline = performance.now() + timeoutMs;
    while (!handle[what]) {
      if (exitCode !== undefined) throw new Error(`${task.system} ${task.role} exited (${exitCode}) before it was ${what}`);
      if (performance.now() > deadline) throw new Error(`${task.system} ${task.role} not ${what} after ${timeoutMs} ms`);
      await sleep(10);
    }
    return handle[what];
  };
  handle.waitReady = (timeoutMs = 60_000) => waitFor("ready", timeoutMs);
  /** A child given `warm` jobs: resolves once it has run them; it starts its timed worker on "go". */
  handle.waitWarm = (timeoutMs = 300_000) => waitFor("warm", timeoutMs);
  handle.stop = () => {
    if (exitCode === undefined) child.send("stop");
    return handle.finish();
  };
  handle.finish = async (timeoutMs = 120_000) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    const code = await exited;
    clearTimeout(timer);
    if (code !== 0 || !handle.result) throw new Error(`${task.system} ${task.role} failed (exit ${code})`);
    return handle.result;
  };
  return handle;
}

/** The run's tail: its last tenth of the jobs, when the children report their counts at once. */
const tailFrom = 0.9;

/**
 * Runs worker children until together they have handled `target` jobs or `capMs` passed,
 * then stops them. `onWarm`: the children warm up first (their tasks' `warm`); called
 * (awaited) once all have, before they start their timed workers. `onAllReady`: called (awaited) once every child is ready. `onTail`:
 * called (not awaited) when the tail begins. `settle`: called once they have handled
 * `target` jobs, while they still run (they may still be recording completions); they are
 * stopped when it resolves. Returns their results, whether the target was reached, when
 * the first child was ready (wall clock) and what `onAllReady` and `settle` returned.
 */
export async function runWorkers(tasks, target, capMs, { onWarm, onAllReady, onTail, settle } = {}) {
  const handles = tasks.map(spawnChild);
  try {
    if (onWarm) {
      await Promise.all(handles.map((h) => h.waitWarm()));
      await onWarm();
      for (const h of handles) h.child.send("go");
    }
    await Promise.all(handles.map((h) => h.waitReady()));
    const allReady = await onAllReady?.();
    const deadline = performance.now() + capMs;
    const total = () => handles.reduce((sum, h) => sum + h.count, 0);
    let tail = false;
    while (total() < target && performance.now() < deadline) {
      if (!tail && total() >= tailFrom * target) {
        tail = true;
        for (const h of handles) if (h.child.connected) h.child.send("tail");
        onTail?.();
      }
      await sleep(tail ? 1 : 5);
    }
    const settled = settle && total() >= target ? await settle() : undefined;
    const results = await Promise.all(handles.map((h) => h.stop()));
    const readyAt = Math.min(...handles.map((h) => h.ready.at));
    return { results, reached: results.reduce((s, r) => s + r.count, 0) >= target, readyAt, allReady, settled };
  } catch (error) {
    for (const h of handles) h.child.kill("SIGKILL");
    throw error;
  }
}
