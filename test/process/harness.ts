import { onTestFailed } from "vitest";
import { type TestErrand, eventually, testErrand } from "../support/db.js";
import { type Spawned, type WorkerSpawn, assertBuilt, fixture, killAll, spawnWorker } from "../support/process.js";

/** One recorded run of a handler (test/process/fixtures/handlers.js). */
export interface Effect {
  readonly job_id: string;
  readonly worker: string;
  readonly attempt: number;
  readonly started_at: Date;
  readonly ended_at: Date | null;
  readonly note: string | null;
}

/** A job row as the process tests look at it. */
export interface JobState {
  readonly id: string;
  readonly status: string;
  readonly attempts: number;
  readonly last_error: string | null;
  readonly errors: { attempt: number; error: string }[];
}

/**
 * A process test's world: its own schema (migrated), an `effects` table the fixture
 * handlers write to, a `kills` table the harness writes to, and the worker processes
 * it started (all SIGKILLed by `cleanup()`).
 */
export interface ProcessTest extends TestErrand {
  /** Starts a worker with the fixture handlers in this test's schema. */
  worker(name: string, args?: readonly string[], extra?: Partial<WorkerSpawn>): Spawned;
  /** Every process started by {@link worker}. */
  readonly processes: Spawned[];
  effects(jobId?: string): Promise<Effect[]>;
  job(id: string): Promise<JobState>;
  /** Waits until job `id` has started `runs` times; fails early if `worker` exits. */
  started(id: string, worker?: Spawned, runs?: number, timeoutMs?: number): Promise<Effect[]>;
  /** Counts of jobs by status. */
  statusCounts(): Promise<Record<string, number>>;
  /**
   * Cuts the worker off at its heartbeat, as a network partition would: an UPDATE that
   * extends a running job's lease (and matches `also`, SQL on OLD/NEW) kills its own
   * connection. Claims and outcome writes pass.
   */
  dropHeartbeats(also?: string): Promise<void>;
}

/** Sets up a {@link ProcessTest}; call `cleanup()` in afterEach. */
export async function processTest(): Promise<ProcessTest> {
  assertBuilt();
  const t = await testErrand();
  const s = t.schema;
  await t.sql(`CREATE TABLE ${s}.effects (
    id bigserial PRIMARY KEY, job_id bigint NOT NULL, worker text NOT NULL, attempt int NOT NULL,
    started_at timestamptz NOT NULL, ended_at timestamptz, note text)`);
  await t.sql(`CREATE TABLE ${s}.kills (worker text PRIMARY KEY, killed_at timestamptz NOT NULL)`);
  const processes: Spawned[] = [];
  // On failure, show what the workers said: the fastest way to see why.
  onTestFailed(() => {
    for (const p of processes) {
      console.log(`--- ${p.name} (last 40 log lines)\n${p.logs.slice(-40).map((l) => JSON.stringify(l)).join("\n")}\n${p.stderr().slice(-1500)}`);
    }
  });
  const effects = (jobId?: string) =>
    t.sql<Effect>(
      `SELECT job_id::text, worker, attempt, started_at, ended_at, note FROM ${s}.effects WHERE $1::bigint IS NULL OR job_id = $1 ORDER BY started_at, id`,
      [jobId ?? null],
    );
  return {
    ...t,
    processes,
    worker(name, args = [], extra = {}) {
      const spawned = spawnWorker({ name, schema: s, handlers: fixture("handlers.js"), args, ...extra });
      processes.push(spawned);
      return spawned;
    },
    effects,
    job: async (id) => (await t.sql<JobState>(`SELECT id::text, status, attempts, last_error, errors FROM ${s}.all_jobs WHERE id = $1`, [id]))[0]!,
    async started(id, worker, runs = 1, timeoutMs = 15_000) {
      return (await eventually(
        async () => {
          if (worker?.hasExited()) throw new Error(`${worker.name} exited before job ${id} started: ${worker.stderr().slice(-2000)}`);
          const found = await effects(id);
          return found.length >= runs ? found : undefined;
        },
        timeoutMs,
        `job ${id} to start ${runs} time(s)`,
      ))!;
    },
    async statusCounts() {
      const rows = await t.sql<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM ${s}.all_jobs GROUP BY status`);
      return Object.fromEntries(rows.map((r) => [r.status, r.n]));
    },
    async dropHeartbeats(also = "true") {
      await t.sql(`
        CREATE FUNCTION ${s}.drop_heartbeats() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF OLD.status = 'running' AND NEW.status = 'running' AND NEW.locked_until > OLD.locked_until AND (${also}) THEN
            PERFORM pg_terminate_backend(pg_backend_pid());
            PERFORM pg_sleep(5);
          END IF;
          RETURN NEW;
        END $$`);
      await t.sql(`CREATE TRIGGER drop_heartbeats BEFORE UPDATE ON ${s}.jobs FOR EACH ROW EXECUTE FUNCTION ${s}.drop_heartbeats()`);
    },
    async cleanup() {
      await killAll(processes);
      await t.cleanup();
    },
  };
}
