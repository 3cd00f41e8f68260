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
  checkJson(value, field, new Set());
  const text = JSON.stringify(value);
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes) {
    throw new ValidationError(field, `is ${bytes} bytes of JSON, over the limit of ${maxBytes}; enqueue identifiers, not objects (load the record inside the job)`);
  }
  return text;
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
