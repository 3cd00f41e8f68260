import type { Command } from "commander";
import { systemClock } from "../clock.js";
import { PermanentError } from "../errors.js";
import type { WorkerEvent } from "../worker/worker.js";
import { type DatabaseFlags, databaseLabel, openFromFlags, withDatabase } from "./common.js";

/** 30 s of the default backoff plays as 150 ms here. */
const scale = 200;
const schema = "errand_demo";

export function register(program: Command): void {
  withDatabase(program.command("demo").description("play a sign-up story: transactional enqueue, a flaky SMTP retried with backoff, a poison job going dead")).action(
    async (flags: DatabaseFlags) => {
      await runDemo(flags);
    },
  );
}

async function runDemo(flags: DatabaseFlags): Promise<void> {
  const start = systemClock.now();
  const at = () => `+${((systemClock.now() - start) / 1000).toFixed(3)}s`.padEnd(9);
  const say = (line: string) => console.log(`  ${at()} ${line}`);
  console.log(`errand demo: a sign-up story on ${databaseLabel(flags)}, schema ${schema}`);
  console.log(`Backoff is the default (30 s doubling, ×0.5–1.0 jitter) scaled 1:${scale}, so minutes of retries play out in seconds.\n`);

  if (!flags.databaseUrl) say("opening the embedded database (the first run creates it: a few seconds)");
  const opening = await openFromFlags({ ...flags, schema }, { migrate: false });
  await opening.driver.transaction((tx) => tx.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
  await opening.close();
  const retry = { baseDelayMs: 30_000 / scale, maxDelayMs: 3_600_000 / scale };
  const errand = await openFromFlags(
    { ...flags, schema },
    { kinds: { send_welcome_email: { retry }, resize_avatar: { retry, maxAttempts: 4 } } },
  );
  say(`database ready (schema ${schema} migrated)`);
  await errand.driver.transaction((tx) => tx.exec(`CREATE TABLE ${schema}.users (id serial PRIMARY KEY, email text NOT NULL, avatar text)`));

  // The request: the user row and its two jobs commit together, and it returns at once.
  const signup = async (email: string, avatar: string) => {
    const began = systemClock.now();
    const ids = await errand.driver.transaction(async (tx) => {
      const { rows } = await tx.query<{ id: number }>(`INSERT INTO ${schema}.users (email, avatar) VALUES ($1, $2) RETURNING id`, [email, avatar]);
      const userId = rows[0]!.id;
      const jobs = await errand.enqueueMany(
        [
          { kind: "send_welcome_email", payload: { user_id: userId }, dedupeKey: `welcome:${userId}` },
          { kind: "resize_avatar", payload: { user_id: userId, upload: avatar } },
        ],
        { db: tx },
      );
      return jobs.map((job) => job.id);
    });
    say(`POST /signup ${email}: user saved + jobs ${ids.join(", ")} enqueued in one transaction — returned in ${systemClock.now() - began} ms (sending and resizing inline: ~2,040 ms)`);
  };
  await signup("ada@example.com", "uploads/ada.png");
  await signup("bob@example.com", "uploads/bob-corrupt.png");

  // The outside world: SMTP is down for the first three tries; bob's image is corrupt.
  let smtpCalls = 0;
  const handlers = {
    send_welcome_email: async ({ user_id }: { user_id: number }) => {
      if (++smtpCalls <= 3) throw new Error(`SMTP 421 4.3.2 service not available (outage, call ${smtpCalls})`);
      await pause(20);
      return user_id;
    },
    resize_avatar: async ({ upload }: { upload: string }) => {
      await pause(40);
      if (upload.includes("corrupt")) throw new Error(`cannot decode ${upload}: invalid PNG header`);
      if (upload.endsWith(".gif")) throw new PermanentError("animated avatars are not supported");
    },
  };

  const worker = errand.worker({ handlers, concurrency: 4, pollIntervalMs: 20, onEvent: (event) => narrate(event, say) });
  let finished!: () => void;
  const allSettled = new Promise<void>((resolve) => (finished = resolve));
  const check = setInterval(() => {
    void errand.driver
      .run<{ n: number }>({ name: "demo_pending", text: `SELECT count(*)::int AS n FROM ${schema}.jobs WHERE status IN ('ready', 'running')` }, [])
      .then(({ rows }) => rows[0]!.n === 0 && finished());
  }, 50);
  await worker.start();
  say(`worker ${worker.id} started (concurrency 4)`);
  await allSettled;
  clearInterval(check);
  await worker.stop();

  const { rows } = await errand.driver.run<{ id: string; kind: string; status: string; attempts: number; last_error: string | null }>(
    { name: "demo_summary", text: `SELECT id::text, kind, status, attempts, last_error FROM ${schema}.all_jobs ORDER BY id` },
    [],
  );
  console.log("\nSummary");
  console.log(`  ${"id".padEnd(4)}${"kind".padEnd(20)}${"status".padEnd(8)}${"attempts".padEnd(10)}last error`);
  for (const row of rows) {
    console.log(`  ${row.id.padEnd(4)}${row.kind.padEnd(20)}${row.status.padEnd(8)}${String(row.attempts).padEnd(10)}${(row.last_error ?? "").split("\n")[0]}`);
  }
  const dead = rows.filter((row) => row.status === "dead").length;
  console.log(`\n${rows.length - dead} done, ${dead} dead. Dead letters wait for a person: errand dead list --schema ${schema}${flags.dataDir ? ` --data-dir ${flags.dataDir}` : ""}`);
  await errand.close();
}

function narrate(event: WorkerEvent, say: (line: string) => void): void {
  const name = (job: { kind: string; id: string; attempt: number }) => `${job.kind} #${job.id} attempt ${job.attempt}`;
  switch (event.type) {
    case "job_done":
      say(`${name(event.job)} done in ${Math.round(event.durationMs)} ms`);
      break;
    case "job_failed":
      say(`${name(event.job)} failed: ${event.error.split("\n")[0]} — retry in ${(event.retryInMs / 1000).toFixed(3)} s (${formatSeconds((event.retryInMs * scale) / 1000)} at full scale)`);
      break;
    case "job_dead":
      say(`${name(event.job)} failed for the last time → dead: ${event.error.split("\n")[0]}`);
      break;
    default:
      break;
  }
}

function formatSeconds(seconds: number): string {
  return seconds >= 60 ? `${(seconds / 60).toFixed(1)} min` : `${Math.round(seconds)} s`;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
