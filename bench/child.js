// One measurement in its own process, so each system runs alone and a worker's RSS is
// its own. Driven by run.js over IPC:
//   node child.js '{"role":"worker","system":"errand","ns":"…","mode":"best"}'
//   (with "warm":N: first N jobs elsewhere → {type:"warm"}, then on "go" as without;
//   with "queue":"q3", errand's worker serves that queue instead of default)
//   → {type:"ready"}, then {type:"progress",count} every 25 ms, and after "tail" also as soon
//   as jobs come in; on "stop" → {type:"result",…}
//   node child.js '{"role":"enqueue-one"|"enqueue-bulk","system":…,"ns":…,"count":N,"batch":B}'
//   (enqueue-one with "callers":C: C loops at once, over a pool of C connections)
//   → {type:"result", count, ms}
import { sleep, monoMs, warmNamespace } from "./lib/common.js";

const task = JSON.parse(process.argv[2]);
const adapter = await import(`./systems/${task.system}.js`);
const callers = task.callers ?? 1;
const system = adapter.create(task.ns, callers > 1 ? { connections: callers } : {});

// If run.js goes away (it timed out or was killed), do not linger.
process.on("disconnect", () => process.exit(1));

const send = (message) => new Promise((resolve) => process.send(message, resolve));

async function enqueueOne() {
  // Connect and prepare first (every connection of the pool, when callers run at once).
  await Promise.all(Array.from({ length: callers }, async (_, c) => {
    for (let i = 0; i < 20; i++) await system.enqueueOne({ warmup: i, c });
  }));
  let next = 0;
  const start = monoMs();
  await Promise.all(Array.from({ length: callers }, async () => {
    while (next < task.count) await system.enqueueOne({ i: next++ });
  }));
  const ms = monoMs() - start;
  await system.close();
  await send({ type: "result", count: task.count, ms });
}

async function enqueueBulk() {
  await system.enqueueMany([{ warmup: true }]);
  const start = monoMs();
  for (let done = 0; done < task.count; done += task.batch) {
    const batch = [];
    for (let i = done; i < Math.min(task.count, done + task.batch); i++) batch.push({ i });
    await system.enqueueMany(batch);
  }
  const ms = monoMs() - start;
  await system.close();
  await send({ type: "result", count: task.count, ms });
}

/**
 * Before the timed worker starts: `jobs` no-op jobs through a worker of the same system and
 * mode, in the namespace the parent set up for this child (`warmNamespace`), dropped
 * afterwards. The process's code is then compiled as a long-running worker's is: errand's
 * first ~25,000 jobs in a process cost up to three times the Node CPU of later ones
 * (bench/README, round of 2026-12-03, late morning), which a run of 12,500 jobs per process never leaves.
 */
async function warmUp(jobs) {
  const warm = adapter.create(warmNamespace(task.ns, task.index));
  for (let done = 0; done < jobs; done += 1000) {
    await warm.enqueueMany(Array.from({ length: Math.min(1000, jobs - done) }, (_, i) => ({ i: done + i })), undefined, task.queue);
  }
  const probe = await warm.probe(jobs);
  const worker = await warm.startWorker(task.mode, () => {}, task.queue);
  // Stopped once the store shows every job completed, as the timed runs are (a peer may
  // otherwise still be writing completions on a pool its stop has ended).
  const deadline = performance.now() + 120_000;
  for (let left = jobs; left > 0; left = await probe.unfinished()) {
    if (performance.now() > deadline) throw new Error(`warm-up: ${left} of ${jobs} jobs not completed in 120 s`);
    await sleep(5);
  }
  await probe.close();
  await worker.stop();
  await warm.teardown();
  await warm.close();
}

async function work() {
  let count = 0;
  let first;
  let last;
  const latencies = [];
  // In the run's tail (the parent says when) the count goes out once per turn of the event
  // loop in which jobs came in, not on the next tick: the parent starts watching the store
  // for the last completions as soon as the count reaches the jobs seeded.
  let eager = false;
  let flushing = false;
  const flush = () => {
    flushing = false;
    if (process.connected) process.send({ type: "progress", count });
  };
  const onJobs = (payloads) => {
    const now = monoMs();
    first ??= now;
    last = now;
    count += payloads.length;
    for (const p of payloads) if (p && typeof p.seq === "number") latencies.push([p.seq, now]);
    if (eager && !flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };
  process.on("message", (m) => {
    if (m !== "tail") return;
    eager = true;
    flush();
  });
  if (task.warm) {
    const go = new Promise((resolve) => process.on("message", (m) => m === "go" && resolve()));
    await warmUp(task.warm);
    await send({ type: "warm" });
    await go;
  }
  const startedAt = monoMs();
  const worker = await system.startWorker(task.mode, onJobs, task.queue);
  const cpuAtReady = process.cpuUsage();
  await send({ type: "ready", at: monoMs(), startupMs: monoMs() - startedAt });
  const progress = setInterval(() => process.send({ type: "progress", count }), 25);
  await new Promise((resolve) => process.on("message", (m) => m === "stop" && resolve()));
  clearInterval(progress);
  const cpu = process.cpuUsage(cpuAtReady); // the worker's CPU while it ran (start-up excluded)
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const stopAt = monoMs();
  await worker.stop();
  const stopMs = monoMs() - stopAt;
  await system.close();
  const maxRssMB = process.resourceUsage().maxRSS / 1024;
  await send({ type: "result", count, first, last, latencies, maxRssMB, stopMs, cpuMs });
}

try {
  if (task.role === "worker") await work();
  else if (task.role === "enqueue-one") await enqueueOne();
  else if (task.role === "enqueue-bulk") await enqueueBulk();
  else throw new Error(`unknown role ${task.role}`);
  process.removeAllListeners("disconnect");
  process.disconnect();
  setTimeout(() => process.exit(0), 200).unref();
} catch (error) {
  console.error(`bench child ${task.system}/${task.role} failed:`, error);
  process.exit(1);
}
