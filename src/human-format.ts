// Durations and numbers in the form people type and read: the CLI's flags (`7d`, `30s`),
// its output and alert messages (`3,810`, `7.5 min`).

import { ValidationError } from "./errors.js";

const units: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  sec: 1_000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * Parses a duration such as `500ms`, `30s`, `1.5m`, `1h` or `7d` (a bare number is
 * seconds) into milliseconds. `field` names the option in the error.
 *
 * @example
 * ```ts
 * parseDuration("7d", "olderThan"); // 604_800_000
 * ```
 */
export function parseDuration(text: string, field: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h|d)?\s*$/.exec(text);
  if (!match) throw new ValidationError(field, `must be a duration like 30s, 5m, 1h or 7d (got ${JSON.stringify(text)})`);
  return Number(match[1]) * units[match[2] ?? "s"]!;
}

/** Formats a number with thousands separators and at most two decimals: `3,810`, `1.33`. */
export function grouped(n: number): string {
  return n.toLocaleString("en-US", { maximumFractionDigits: 2 });
}

/** A short human age: `42 s`, `7.5 min`, `3.2 h`, `2.1 d`. */
export function humanAge(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${grouped(Math.round(s))} s`;
  if (s < 3600) return `${grouped(round(s / 60, 1))} min`;
  if (s < 86_400) return `${grouped(round(s / 3600, 1))} h`;
  return `${grouped(round(s / 86_400, 1))} d`;
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
