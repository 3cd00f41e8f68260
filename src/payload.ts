import { ValidationError } from "./errors.js";

/** Any value that survives a JSON round trip unchanged. */
export type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };

/** Default payload size limit: 256 KiB of JSON text. */
export const defaultMaxPayloadBytes = 256 * 1024;

/**
 * Serialises a payload, refusing anything that would not come back unchanged from the
 * database (`undefined`, functions, class instances such as `Date` or `Map`, `NaN`,
 * cycles, `\u0000`) and anything over `maxBytes`. The error names the offending path.
 */
export function serialisePayload(value: unknown, maxBytes: number, field = "payload"): string {
  // The common payload passes the quick check; only a suspect one is walked again with
  // paths and cycle detection, to name what is wrong.
  if (!isPlainJson(value, 0)) checkJson(value, field, new Set());
  const text = JSON.stringify(value);
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes) {
    throw new ValidationError(field, `is ${bytes} bytes of JSON, over the limit of ${maxBytes}; enqueue identifiers, not objects (load the record inside the job)`);
  }
  return text;
}

/**
 * True when `value` is certainly plain JSON: no path strings, no set of seen objects.
 * False for anything doubtful, including nesting deeper than 64 (perhaps a cycle).
 */
function isPlainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
      return !value.includes("\u0000");
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object": {
      if (value === null) return true;
      if (depth > 64) return false;
      if (Array.isArray(value)) {
        for (const item of value as unknown[]) if (!isPlainJson(item, depth + 1)) return false;
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key in value) {
        if (!Object.hasOwn(value, key) || !isPlainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

function checkJson(value: unknown, path: string, seen: Set<object>): void {
  switch (typeof value) {
    case "string":
      if (value.includes("\u0000")) throw new ValidationError(path, "contains a \\u0000 character, which PostgreSQL jsonb cannot store");
      return;
    case "boolean":
      return;
    case "number":
      if (!Number.isFinite(value)) throw new ValidationError(path, `${value} is not valid JSON`);
      return;
    case "object": {
      if (value === null) return;
      if (seen.has(value)) throw new ValidationError(path, "is a circular reference");
      seen.add(value);
      if (Array.isArray(value)) {
        value.forEach((item, i) => checkJson(item, `${path}[${i}]`, seen));
      } else {
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) {
          const name = (value as { constructor?: { name?: string } }).constructor?.name ?? "an object with a prototype";
          throw new ValidationError(path, `is a ${name}; payloads must be plain JSON (convert it first, e.g. a Date to an ISO string)`);
        }
        for (const [key, item] of Object.entries(value)) checkJson(item, `${path}.${key}`, seen);
      }
      seen.delete(value);
      return;
    }
    default:
      throw new ValidationError(path, `is ${value === undefined ? "undefined" : `a ${typeof value}`}, which is not JSON`);
  }
}
