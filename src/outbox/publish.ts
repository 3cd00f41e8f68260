/**
 * Publish, in one place: a message is validated (the error names the field), encoded with
 * the rest of its batch as one JSON array and inserted into the outbox in one statement,
 * on the caller's connection when given: it commits or rolls back with their transaction.
 */
import { runOn } from "../driver/pg.js";
import type { Driver, Queryable } from "../driver/types.js";
import { ValidationError } from "../errors.js";
import { type Json, serialisePayload } from "../payload.js";
import { outboxQueriesFor } from "../sql/outbox.js";
import { checkKeys, checkText } from "../validate.js";

/** Options of one {@link Errand.publish}. */
export interface PublishOptions {
  /** Messages with the same key are delivered in the order they were published (their ids). At most 1,000 bytes. */
  readonly key?: string;
  /** Broker headers: names are tokens (letters, digits, `-`, `_`, `.`), values one-line strings. Names starting `Nats-` or `Errand-` are reserved. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Your connection or open transaction: the message commits or rolls back with it. */
  readonly db?: Queryable;
}

/** One message for {@link Errand.publishMany}. */
export interface MessageSpec extends Omit<PublishOptions, "db"> {
  /** Dot-separated words of letters, digits, `_` and `-`: `orders.created`. The NATS subject and the AMQP routing key. */
  readonly topic: string;
  /** Plain JSON, at most `maxPayloadBytes` (256 KiB by default). */
  readonly message: Json;
}

/** What a publish returns. */
export interface PublishResult {
  /** The outbox row's id: the message id the relay gives the broker. */
  readonly id: string;
}

/** Longest topic, in characters (a NATS subject and an AMQP routing key, 255 bytes, both hold it). */
export const maxTopicLength = 200;
const topicPattern = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const maxKeyBytes = 1000;
const maxHeaders = 64;
const maxHeaderValueBytes = 4096;
const headerName = /^[A-Za-z0-9_.-]{1,128}$/;
const reservedHeader = /^(nats-|errand-)/i;

/** Checks a topic: the rule the outbox table's CHECK constraint enforces for plain-SQL inserts too. */
export function checkTopic(value: unknown, field = "topic"): string {
  const topic = checkText(value, field, { maxLength: maxTopicLength });
  if (!topicPattern.test(topic)) {
    throw new ValidationError(
      field,
      `${JSON.stringify(topic)} is not a topic: use dot-separated words of letters, digits, _ and - (e.g. orders.created); no spaces, wildcards (* > #) or empty words`,
    );
  }
  return topic;
}

function checkHeaders(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype) {
    throw new ValidationError(field, "must be a plain object of header name → string value");
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > maxHeaders) throw new ValidationError(field, `has ${entries.length} headers, over the limit of ${maxHeaders}`);
  const seen = new Set<string>();
  for (const [name, text] of entries) {
    if (!headerName.test(name)) throw new ValidationError(`${field}.${name}`, "header name must be 1–128 letters, digits, -, _ or .");
    if (reservedHeader.test(name)) throw new ValidationError(`${field}.${name}`, "header names starting Nats- or Errand- are reserved for the relay");
    const lower = name.toLowerCase();
    if (seen.has(lower)) throw new ValidationError(`${field}.${name}`, "header names are case-insensitive: this one is given twice");
    seen.add(lower);
    if (typeof text !== "string") throw new ValidationError(`${field}.${name}`, `must be a string (got ${text === null ? "null" : typeof text})`);
    if (/[\r\n\u0000]/.test(text)) throw new ValidationError(`${field}.${name}`, "must be one line (no CR, LF or \\u0000)");
    if (Buffer.byteLength(text, "utf8") > maxHeaderValueBytes) throw new ValidationError(`${field}.${name}`, `must be at most ${maxHeaderValueBytes} bytes`);
    checkText(text === "" ? " " : text, `${field}.${name}`, {});
  }
  return JSON.stringify(value);
}

const specKeys = ["topic", "message", "key", "headers"];

/**
 * Validates messages and encodes them as the insert statement's parameter: a JSON array
 * of `{topic, key?, message, headers?}`. An error names the field, after `messages[i].`
 * unless `single`. Nothing is written unless every message is valid.
 */
export function encodeMessages(specs: readonly MessageSpec[], maxBytes: number, single = false): string {
  const entries: string[] = [];
  specs.forEach((spec, i) => {
    const field = single ? "" : `messages[${i}].`;
    checkKeys(spec, single ? "options" : `messages[${i}]`, specKeys);
    const topic = checkTopic(spec.topic, `${field}topic`);
    if (spec.message === undefined) throw new ValidationError(`${field}message`, "is required (any plain JSON value)");
    const message = serialisePayload(spec.message, maxBytes, `${field}message`, "publish identifiers and the facts that changed, not whole records");
    let entry = `{"topic":${JSON.stringify(topic)},"message":${message}`;
    if (spec.key !== undefined) entry += `,"key":${JSON.stringify(checkText(spec.key, `${field}key`, { maxBytes: maxKeyBytes }))}`;
    const headers = checkHeaders(spec.headers, `${field}headers`);
    if (headers !== undefined) entry += `,"headers":${headers}`;
    entries.push(`${entry}}`);
  });
  return `[${entries.join(",")}]`;
}

/** Inserts `specs` into the outbox in one statement, on `db` when given. Results are in input order. */
export async function publishMessages(
  target: { readonly driver: Driver; readonly schema: string; readonly maxPayloadBytes: number },
  specs: readonly MessageSpec[],
  options: { readonly db?: Queryable | undefined; readonly single?: boolean },
): Promise<PublishResult[]> {
  if (!Array.isArray(specs)) throw new ValidationError("messages", "must be an array");
  if (specs.length === 0) return [];
  const json = encodeMessages(specs, target.maxPayloadBytes, options.single === true);
  const { insert } = outboxQueriesFor(target.schema);
  const { rows } = options.db ? await runOn<{ ids: (string | number)[] }>(options.db, insert, [json]) : await target.driver.run<{ ids: (string | number)[] }>(insert, [json]);
  return rows[0]!.ids.map((id) => ({ id: String(id) }));
}
