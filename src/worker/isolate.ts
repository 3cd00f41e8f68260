import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Worker as Thread } from "node:worker_threads";
import type { FromIsolate, IsolatedAnswer, IsolatedRequest, ToIsolate } from "./isolated-protocol.js";

/** Plain JavaScript, so it sits beside this file both in src/ and in dist/. */
/**
 * The script threads and processes run, beside this module. Resolved on first use, not at
 * load: a CommonJS bundle of an app that never isolates a handler has no `import.meta.url`.
 */
const entry = (): URL => new URL("./isolated-entry.js", import.meta.url);

/** Where an isolated handler runs. */
export type IsolationMode = "thread" | "process";

/** What the job an isolate runs hears from it. */
export interface IsolateJob {
  /** A report while the handler runs, or its reply. */
  reply(message: FromIsolate): void;
  /** The request could not be delivered, or the isolate could not start. */
  error(error: unknown): void;
  /** The isolate is gone; `description` says how ("exited with code 3"). */
  exit(description: string): void;
}

interface Handle {
  send(message: ToIsolate, failed: (error: unknown) => void): void;
  kill(): void;
  ref(): void;
  unref(): void;
}

interface HandleEvents {
  message(message: FromIsolate): void;
  error(error: unknown): void;
  exit(description: string): void;
}

/** One worker thread or child process running isolated-entry.js, one job at a time. */
export class Isolate {
  /** The job it runs now; undefined while idle. */
  job: IsolateJob | undefined;
  /** Resolves once the thread or process has exited. */
  readonly exited: Promise<void>;
  readonly #handle: Handle;
  #gone = false;

  /** Starts it; `onGone` is called once, when it has exited. */
  constructor(mode: IsolationMode, onGone: (isolate: Isolate) => void) {
    let exited!: () => void;
    this.exited = new Promise((resolve) => (exited = resolve));
    const events: HandleEvents = {
      // Talking while idle means a stray callback of an earlier job threw: not reusable.
      message: (reply) => (this.job ? this.job.reply(reply) : this.kill()),
      error: (error) => (this.job ? this.job.error(error) : this.kill()),
      exit: (description) => {
        if (this.#gone) return;
        this.#gone = true;
        const job = this.job;
        this.job = undefined;
        onGone(this);
        exited();
        job?.exit(description);
      },
    };
    this.#handle = mode === "thread" ? startThread(events) : startProcess(events);
  }

  /** Hands it the job's request; failures arrive through `job.error`, never as a throw. */
  send(request: IsolatedRequest): void {
    const failed = (error: unknown) => {
      const job = this.job;
      this.kill();
      job?.error(error);
    };
    try {
      this.#handle.send(request, failed);
    } catch (error) {
      // A payload that cannot be cloned throws here, before the caller is ready to hear it.
      process.nextTick(failed, error);
    }
  }

  /**
   * Answers the running job's isolate (a checkpoint written or refused). An isolate that
   * is gone or going cannot hear it and needs not: its exit reaches the job anyway.
   */
  answer(answer: IsolatedAnswer): void {
    if (this.#gone) return;
    try {
      this.#handle.send(answer, () => {});
    } catch {
      // Being terminated: see above.
    }
  }

  /** Ends it at once, whatever it is doing (a spinning loop included). */
  kill(): void {
    if (!this.#gone) this.#handle.kill();
  }

  /** While it runs a job it keeps the process alive, like any pending work. */
  busy(): void {
    this.#handle.ref();
  }

  /** An idle isolate must not keep the process from exiting. */
  idle(): void {
    this.#handle.unref();
  }
}

function startThread(events: HandleEvents): Handle {
  const thread = new Thread(entry());
  thread.on("message", (message: FromIsolate) => events.message(message));
  thread.on("error", (error) => events.error(error));
  thread.on("exit", (code) => events.exit(`exited with code ${code}`));
  return {
    send: (message) => thread.postMessage(message),
    kill: () => void thread.terminate(),
    ref: () => thread.ref(),
    unref: () => thread.unref(),
  };
}

function startProcess(events: HandleEvents): Handle {
  // "advanced" serialisation is the structured clone threads use: Dates and the like
  // cross the same way in both modes.
  const child = fork(fileURLToPath(entry()), [], { serialization: "advanced" });
  const pid = child.pid ?? "?";
  child.on("message", (message) => events.message(message as FromIsolate));
  child.on("error", (error) => {
    events.error(error);
    // A process that never started sends no 'exit'.
    if (child.pid === undefined) events.exit("could not be started");
  });
  child.on("exit", (code, signal) => events.exit(signal ? `(pid ${pid}) was killed by ${signal}` : `(pid ${pid}) exited with code ${code ?? "?"}`));
  return {
    send: (message, failed) => child.send(message, (error) => error && failed(error)),
    kill: () => void child.kill("SIGKILL"),
    ref: () => {
      child.ref();
      child.channel?.ref();
    },
    unref: () => {
      child.unref();
      child.channel?.unref();
    },
  };
}
