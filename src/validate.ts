/**
 * Field checks, in one place: every option, argument and query parameter errand accepts is
 * checked by one of these, and a failure is a {@link ValidationError} naming the field.
 */
import { closest } from "./did-you-mean.js";
import { ValidationError } from "./errors.js";

export { closest } from "./did-you-mean.js";

/** Rejects unknown option names, suggesting the nearest known one. */
export function checkKeys(options: unknown, field: string, known: readonly string[]): void {
  if (options === undefined) return;
  if (typeof options !== "object" || options === null || Array.isArray(options)) throw new ValidationError(field || "options", "must be an object");
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      const hint = closest(key, known);
      throw new ValidationError(`${field}.${key}`.replace(/^\./, ""), `unknown option${hint ? ` — did you mean '${hint}'?` : ""}`);
    }
  }
}

/** A positive, finite number of milliseconds. */
export function positiveMs(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) throw new ValidationError(field, `must be a positive number of milliseconds (got ${show(value)})`);
  return value;
}

/** A maximum run time: a whole number of milliseconds, at least 1, that fits PostgreSQL's \`int\`. */
export function timeoutMs(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 2_147_483_647) {
    throw new ValidationError(field, `must be a whole number of milliseconds from 1 to 2147483647 (got ${show(value)})`);
  }
  return value;
}

/** A non-negative, finite number of milliseconds. */
export function nonNegativeMs(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) throw new ValidationError(field, `must be a number of milliseconds ≥ 0 (got ${show(value)})`);
  return value;
}

/** A share of a whole: a number more than 0 and at most 1. */
export function share(value: unknown, field: string): number {
  if (typeof value !== "number" || !(value > 0 && value <= 1)) throw new ValidationError(field, `must be a number more than 0 and at most 1 (got ${show(value)})`);
  return value;
}

/** An integer that fits PostgreSQL's `int` (a priority, a limit). */
export function integer(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || Math.abs(value) > 2_147_483_647) throw new ValidationError(field, `must be an integer (got ${show(value)})`);
  return value;
}

/** An integer from `min` to `max`. */
export function integerIn(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(field, `must be an integer from ${min} to ${max} (got ${show(value)})`);
  }
  return value;
}

/** Most attempts a job may have. */
export const maxMaxAttempts = 1_000_000;

/** Attempts before a job is dead: a positive integer. */
export function checkMaxAttempts(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > maxMaxAttempts) {
    throw new ValidationError(field, `must be a positive integer (got ${show(value)})`);
  }
  return value;
}

/** The largest job id: PostgreSQL's `bigint`. */
const maxJobId = "9223372036854775807";

/** True for a job id written out: a positive integer that fits a `bigint`. */
export function isJobId(text: string): boolean {
  return /^[1-9][0-9]{0,18}$/.test(text) && (text.length < maxJobId.length || text <= maxJobId);
}

/** A job id (a positive integer that fits a `bigint`, as a number or a string), as text. */
export function checkId(id: unknown, field: string): string {
  const text = typeof id === "number" && Number.isSafeInteger(id) ? String(id) : id;
  if (typeof text !== "string" || !isJobId(text)) throw new ValidationError(field, `must be a job id (a positive integer), got ${show(id)}`);
  return text;
}

/**
 * What PostgreSQL cannot store of a string, or undefined: a `\u0000` (text and jsonb refuse
 * it) or half of a surrogate pair (jsonb refuses it; text would silently store U+FFFD).
 */
export function textProblem(text: string): string | undefined {
  if (text.includes("\u0000")) return "contains a \\u0000 character, which PostgreSQL cannot store";
  const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.exec(text);
  if (lone) return `contains half of a surrogate pair (\\u${lone[0].charCodeAt(0).toString(16)} at index ${lone.index}), which is not valid Unicode`;
  return undefined;
}

/** A non-empty string PostgreSQL can store, of at most `maxLength` characters and `maxBytes` bytes of UTF-8. */
export function checkText(value: unknown, field: string, limits: { readonly maxLength?: number; readonly maxBytes?: number }): string {
  if (typeof value !== "string" || value.length === 0) throw new ValidationError(field, `must be a non-empty string (got ${show(value)})`);
  if (limits.maxLength !== undefined && value.length > limits.maxLength) throw new ValidationError(field, `must be at most ${limits.maxLength} characters (got ${value.length})`);
  if (limits.maxBytes !== undefined && value.length * 3 > limits.maxBytes) {
    const bytes = Buffer.byteLength(value, "utf8");
    if (bytes > limits.maxBytes) throw new ValidationError(field, `must be at most ${limits.maxBytes} bytes of UTF-8 (got ${bytes})`);
  }
  const problem = textProblem(value);
  if (problem) throw new ValidationError(field, problem);
  return value;
}

// 1970 to 9999: a run time before the Unix epoch is a mistake, PGlite reads years before
// 100 back wrong (0001 as 2001), and four-digit years are what both databases parse.
const earliest = 0;
const latest = Date.UTC(10_000, 0, 1);
const isoTime = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

/**
 * A point in time — a valid `Date`, or an ISO 8601 string such as `2026-12-01T09:00:00Z`
 * — as an ISO string in UTC. Impossible dates (`2026-02-30`, `25:00`) are refused rather
 * than rolled over into the next month or day. Without a zone a date means UTC midnight
 * and a date with a time means local time, as in JavaScript.
 */
export function checkDate(value: unknown, field: string): string {
  const time = value instanceof Date ? value.getTime() : typeof value === "string" ? parseIso(value.trim(), field) : Number.NaN;
  if (Number.isNaN(time)) throw new ValidationError(field, `must be a Date or an ISO 8601 time such as 2026-12-01T09:00:00Z (got ${show(value)})`);
  if (time < earliest || time >= latest) throw new ValidationError(field, `must be from the year 1970 to 9999 (got ${show(value)})`);
  return new Date(time).toISOString();
}

function parseIso(text: string, field: string): number {
  const match = isoTime.exec(text);
  if (!match) return Number.NaN;
  const [, y, mo, d, h = "0", mi = "0", s = "0", fraction = "0", zone] = match;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  const ms = Number(fraction.padEnd(3, "0").slice(0, 3));
  if (month < 1 || month > 12) throw new ValidationError(field, `${show(text)} is not a date: there is no month ${month}`);
  const days = new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !leap(year) ? 1 : 0);
  if (day < 1 || day > days) throw new ValidationError(field, `${show(text)} is not a date: ${monthNames[month - 1]} ${year} has ${days} days`);
  if (hour > 23 || minute > 59 || second > 59) throw new ValidationError(field, `${show(text)} is not a time of day (hours 0–23, minutes and seconds 0–59)`);
  const at = new Date(0);
  if (zone === undefined && match[4] !== undefined) {
    at.setFullYear(year, month - 1, day);
    at.setHours(hour, minute, second, ms);
    return at.getTime();
  }
  at.setUTCFullYear(year, month - 1, day);
  at.setUTCHours(hour, minute, second, ms);
  return at.getTime() - offsetMs(zone ?? "Z", text, field);
}

function offsetMs(zone: string, text: string, field: string): number {
  if (zone === "Z" || zone === "z") return 0;
  const [hours, minutes] = [Number(zone.slice(1, 3)), Number(zone.slice(-2))];
  const m = zone.length > 3 ? minutes : 0;
  if (hours > 23 || m > 59) throw new ValidationError(field, `${show(text)} has an impossible UTC offset ${zone}`);
  return (zone[0] === "-" ? -1 : 1) * (hours * 60 + m) * 60_000;
}

const monthNames = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

function leap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** A value as an error message quotes it: JSON where it can be, cut short. */
function show(value: unknown): string {
  let text: string;
  try {
    text = typeof value === "bigint" ? `${value}n` : typeof value === "number" && !Number.isFinite(value) ? String(value) : value instanceof Date ? `Date(${Number.isNaN(value.getTime()) ? "invalid" : value.toISOString()})` : (JSON.stringify(value) ?? String(value));
  } catch {
    text = Object.prototype.toString.call(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}

/** Longest queue name, in characters. */
export const maxQueueLength = 100;

/**
 * Checks a queue name: letters, digits and `_ . : -`, starting with a letter or digit, at
 * most 100 characters — so it reads the same in a flag (`--queue email=10`), a metric
 * label and a URL.
 */
export function checkQueueName(value: unknown, field: string): string {
  if (typeof value !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.:-]*$/.test(value) || value.length > maxQueueLength) {
    throw new ValidationError(
      field,
      `must be a queue name: letters, digits and _ . : - (starting with a letter or digit), at most ${maxQueueLength} characters (got ${JSON.stringify(value)})`,
    );
  }
  return value;
}
