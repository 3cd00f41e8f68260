/**
 * Each failed attempt's error of a JetStream job, kept until the job goes dead, so its dead
 * row lists every attempt's error as on PostgreSQL. A negative ack cannot change the
 * message, so the errors live beside it: one message per attempt in a small limits stream,
 * {@link attemptErrorsStream}, that the first failure creates (subjects
 * `errand_attempt_errors.<stream>.<consumer>.<job id>.<attempt>`, one message per subject,
 * kept 7 days, as many replicas as the first job stream that needed it). A job that never fails costs nothing; a failed attempt costs one publish; a
 * dead job a read per earlier attempt and a purge. When the stream cannot be created (no
 * permission, or a stream already capturing those subjects) the dead row keeps only the
 * last error, as before, and the worker reports why once.
 */
import type { JetStreamManager, QueueConnection } from "./connection.js";
import type { ResolvedQueue } from "./options.js";

/** The stream holding failed attempts' errors, shared by every JetStream queue on the server. */
export const attemptErrorsStream = "ERRAND_ATTEMPT_ERRORS";
const subjectRoot = "errand_attempt_errors";
/** How long an attempt's error is kept when its job never goes dead (it succeeded later). */
const keepNanos = 7 * 86_400 * 1e9;
/** As on PostgreSQL, a dead row keeps the last 25 attempts' errors. */
const keptAttempts = 25;

/** One earlier attempt's error, as a dead row's `errors` holds it. */
export interface AttemptError {
  readonly attempt: number;
  readonly at: string;
  readonly error: string;
  readonly transport: "jetstream";
}

/** Records and reads a queue's attempt errors on a worker's connection. */
export class AttemptErrors {
  readonly #connection: QueueConnection;
  readonly #prefix: string;
  readonly #jobStream: string;
  readonly #onUnavailable: (error: Error) => void;
  #ready: Promise<boolean> | undefined;

  constructor(connection: QueueConnection, queue: ResolvedQueue, onUnavailable: (error: Error) => void) {
    this.#connection = connection;
    this.#prefix = `${subjectRoot}.${queue.stream}.${queue.consumer}`;
    this.#jobStream = queue.stream;
    this.#onUnavailable = onUnavailable;
  }

  /** Stores attempt `attempt`'s error of job `id`, acknowledged by JetStream; false when it could not be kept. */
  async record(id: string, attempt: number, error: string): Promise<boolean> {
    if (!(await this.#ensureStream())) return false;
    await this.#connection.client.publish(this.#subject(id, attempt), JSON.stringify({ error }));
    return true;
  }

  /** The recorded errors of job `id`'s attempts before `attempt` (the last 25), oldest first; the time is JetStream's. */
  async read(id: string, attempt: number): Promise<AttemptError[]> {
    if (attempt <= 1 || !(await this.#ensureStream())) return [];
    const first = Math.max(1, attempt - keptAttempts + 1);
    const found = await Promise.all(
      Array.from({ length: attempt - first }, async (_, i) => {
        const stored = await this.#connection.jsm.streams.getMessage(attemptErrorsStream, { last_by_subj: this.#subject(id, first + i) }).catch(() => null);
        if (!stored) return undefined; // that attempt ended without an error: a snooze, a lost worker
        return { attempt: first + i, at: stored.time.toISOString(), error: stored.json<{ error: string }>().error, transport: "jetstream" as const };
      }),
    );
    return found.filter((entry): entry is AttemptError => entry !== undefined);
  }

  /** Deletes job `id`'s errors once its dead row holds them (else they age out). */
  async forget(id: string): Promise<void> {
    if (await this.#ensureStream()) await this.#connection.jsm.streams.purge(attemptErrorsStream, { filter: `${this.#prefix}.${token(id)}.>` });
  }

  #subject(id: string, attempt: number): string {
    return `${this.#prefix}.${token(id)}.${attempt}`;
  }

  /** Creates the stream on first use; false (reported once) when that is not possible. */
  #ensureStream(): Promise<boolean> {
    return (this.#ready ??= create(this.#connection.jsm, this.#jobStream).then(
      () => true,
      (error: unknown) => {
        this.#onUnavailable(new Error(`failed attempts' errors cannot be kept in JetStream stream ${attemptErrorsStream} (${(error as Error).message}): dead jobs keep only their last error`, { cause: error }));
        return false;
      },
    ));
  }
}

/** Creates the stream unless it exists, with as many replicas as the job stream: its errors survive what its jobs survive. */
async function create(jsm: JetStreamManager, jobStream: string): Promise<void> {
  const exists = await jsm.streams.info(attemptErrorsStream).then(
    () => true,
    (error: unknown) => {
      if (/not found/i.test((error as Error).message)) return false;
      throw error;
    },
  );
  if (exists) return;
  const replicas = (await jsm.streams.info(jobStream)).config.num_replicas;
  await jsm.streams.add({ name: attemptErrorsStream, subjects: [`${subjectRoot}.>`], max_msgs_per_subject: 1, max_age: keepNanos, num_replicas: replicas }).catch((error: unknown) => {
    // Another worker created it first.
    if (!/already in use/i.test((error as Error).message)) throw error;
  });
}

/** A job id as one subject token: `.`, `*`, `>` and spaces are not allowed in one. */
function token(id: string): string {
  return id.replace(/[^A-Za-z0-9_:-]/g, "_");
}
