import { createHash } from "node:crypto";
import { ValidationError } from "../errors.js";
import type { Statement } from "../driver/types.js";

/** PostgreSQL's limit on a name (NAMEDATALEN − 1 bytes): longer ones are cut or refused. */
const maxNameBytes = 63;

/**
 * Checks a schema name: a plain lower-case identifier, so it is safe in SQL text, short
 * enough that every name derived from it (the notification channel) fits PostgreSQL's
 * 63-byte limit. Checked before anything is written, so a name that would migrate but
 * then fail every enqueue is refused up front.
 */
export function checkSchemaName(schema: unknown): string {
  if (typeof schema !== "string" || !/^[a-z_][a-z0-9_]*$/.test(schema)) {
    throw new ValidationError("schema", `must be a lower-case SQL identifier (letters, digits, _), got ${JSON.stringify(schema)}`);
  }
  const longest = maxNameBytes - channelFor("").length;
  if (schema.length > longest) {
    throw new ValidationError("schema", `must be at most ${longest} characters, so the notification channel '${channelFor("…")}' fits PostgreSQL's ${maxNameBytes}-byte limit on names (got ${schema.length})`);
  }
  return schema;
}

/** The schema as it appears in SQL text. */
export function qualified(schema: string): string {
  return `"${checkSchemaName(schema)}"`;
}

/** The LISTEN/NOTIFY channel for a schema (see checkSchemaName for its length). */
export function channelFor(schema: string): string {
  return `errand_jobs_${schema}`;
}

/**
 * The payload of the notice on the jobs channel ({@link channelFor}) that says a running
 * job was cancelled: its worker sends a heartbeat at once, which reports which. Enqueue's
 * notices carry a time instead (see {@link insertedSince}), so one listening connection per
 * worker serves both.
 */
export const cancelNotice = "cancel";

/**
 * The start of the transaction that inserted jobs, in epoch microseconds (server clock), from
 * the insert trigger's notice on the jobs channel (migration 019; empty before it): its jobs'
 * run_at defaults to that time, so a worker whose claim floor lies above it lowers the floor
 * there (see src/worker/claim-floor.ts). undefined for any other notice.
 */
export function insertedSince(payload: string | undefined): number | undefined {
  return payload !== undefined && /^\d{1,16}$/.test(payload) ? Number(payload) : undefined;
}

/**
 * The payload of the notice on the jobs channel that says jobs came back to ready keeping
 * their run_at (given back by a worker): they lie below the workers' claim floors, which
 * the workers drop (see src/worker/claim-floor.ts).
 */
export const returnedNotice = "returned";

/**
 * The channel on which finished jobs and progress are announced to `errand.waitFor`
 * (see waitNotice in src/sql/jobs.ts). As long as {@link channelFor}'s, so the schema
 * check covers it too.
 */
export function waitChannelFor(schema: string): string {
  return `errand_wait_${schema}`;
}

/**
 * A named statement; the name is a hash of the text, so it is stable per schema.
 * `background`: see {@link Statement.background}.
 */
export function statement(text: string, background = false): Statement {
  const name = `errand_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`;
  return background ? { name, text, background } : { name, text };
}

/** Builds a schema's statements once and hands back the same object after that. */
export function memoisePerSchema<T>(build: (schema: string) => T): (schema: string) => T {
  const cache = new Map<string, T>();
  return (schema) => {
    let built = cache.get(schema);
    if (built === undefined) {
      built = build(schema);
      cache.set(schema, built);
    }
    return built;
  };
}
