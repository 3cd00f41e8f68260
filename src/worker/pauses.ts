import type { Driver } from "../driver/types.js";
import { queueQueriesFor } from "../sql/queues.js";

/**
 * What one queue's {@link Producer} asks about pauses. Without any pause (the common case)
 * `open` is true and `claimable` is the same array for every claim.
 */
export class QueueGate {
  /** The kinds a claim may take now: those with a handler and not paused; none while the queue is paused. */
  claimable: readonly string[];
  /** True when nothing this queue runs is paused: no job needs a check. */
  open = true;
  /** True when the queue has a global concurrency limit: its claims go through the limited claim. */
  limited = false;
  readonly #queue: string;
  readonly #handlerKinds: readonly string[];
  #queuePaused = false;
  #pausedKinds: ReadonlySet<string> = new Set();

  constructor(queue: string, handlerKinds: readonly string[]) {
    this.#queue = queue;
    this.#handlerKinds = handlerKinds;
    this.claimable = handlerKinds;
  }

  /** Whether a job of `kind` in this queue must not start now. */
  paused(kind: string): boolean {
    return this.#queuePaused || this.#pausedKinds.has(kind);
  }

  /** Takes in the pauses and the limited queues read from the database. */
  update(queues: ReadonlySet<string>, kinds: ReadonlySet<string>, limited: ReadonlySet<string>): void {
    this.limited = limited.has(this.#queue);
    this.#queuePaused = queues.has(this.#queue);
    this.#pausedKinds = kinds;
    const pausedHere = this.#handlerKinds.some((kind) => kinds.has(kind));
    this.open = !this.#queuePaused && !pausedHere;
    this.claimable = this.#queuePaused ? [] : pausedHere ? this.#handlerKinds.filter((kind) => !kinds.has(kind)) : this.#handlerKinds;
  }
}

/**
 * A worker's view of the paused queues and kinds (the `pauses` table) and of which queues
 * have a concurrency limit (`queue_limits`): read at start, on
 * a notice that they changed, and by a poll in case a notice was missed. One read at a
 * time; a request during a read reads again after it, so the last read wins.
 */
export class WorkerPauses {
  readonly #driver: Driver;
  readonly #schema: string;
  readonly #gates: QueueGate[] = [];
  readonly #handlerKinds: readonly string[];
  /** The pauses last read, as text: a read that finds the same changes nothing. */
  #seen = "";
  #reading: Promise<boolean> | undefined;
  #again = false;

  constructor(driver: Driver, schema: string, handlerKinds: readonly string[]) {
    this.#driver = driver;
    this.#schema = schema;
    this.#handlerKinds = handlerKinds;
  }

  /** The gate of one queue this worker serves. */
  gate(queue: string): QueueGate {
    const gate = new QueueGate(queue, this.#handlerKinds);
    this.#gates.push(gate);
    return gate;
  }

  /** Reads the pauses; resolves true when they changed since the last read. Rejects when the read fails. */
  refresh(): Promise<boolean> {
    if (this.#reading) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<boolean> {
    let changed = false;
    do {
      this.#again = false;
      const { rows } = await this.#driver.run<{ scope: string; name: string }>(queueQueriesFor(this.#schema).workerGates, []);
      const seen = rows.map((row) => `${row.scope}:${row.name}`).join("\n");
      if (seen === this.#seen) continue;
      this.#seen = seen;
      changed = true;
      const queues = new Set(rows.filter((row) => row.scope === "queue").map((row) => row.name));
      const kinds = new Set(rows.filter((row) => row.scope === "kind").map((row) => row.name));
      const limited = new Set(rows.filter((row) => row.scope === "limit").map((row) => row.name));
      for (const gate of this.#gates) gate.update(queues, kinds, limited);
    } while (this.#again);
    return changed;
  }
}
