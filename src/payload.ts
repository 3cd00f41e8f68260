import { ValidationError } from "./errors.js";
import { textProblem } from "./validate.js";

/** Any value that survives a JSON round trip unchanged. */
export type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };

/**
 * Deepest nesting of arrays and objects accepted. PostgreSQL parses jsonb recursively and
 * gives up somewhere past a few thousand levels (PGlite sooner), and so would the checks
 * here; no real payload comes near this.
 */
const maxPayloadDepth = 1000;

/**
 * Serialises a payload, refusing anything that would not come back unchanged from the
 * database (`undefined`, functions, class instances such as `Date` or `Map`, `NaN`,
 * cycles, `\u0000` or half a surrogate pair in a key or a string, nesting deeper than
 * 1,000 levels) and anything over `maxBytes`. The error names the offending path, and
 * an oversized value's error ends with `advice`.
 */
export function serialisePayload(
  value: unknown,
  maxBytes: number,
  field = "payload",
  advice = "enqueue identifiers, not objects (load the record inside the job)",
): string {
  // The common payload passes the quick check; only a suspect one is walked again with
  // paths and cycle detection, to name what is wrong.
  if (!isPlainJson(value, 0)) checkJson(value, field, { root: field, seen: new Set() }, 0);
  const text = JSON.stringify(value);
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes) {
    throw new ValidationError(field, `is ${bytes} bytes of JSON, over the limit of ${maxBytes}; ${advice}`);
  }
  return text;
}

/** Characters that need a closer look: NUL and both halves of surrogate pairs. */
const suspect = /[\u0000\ud800-\udfff]/;

/**
 * True when `value` is certainly plain JSON: no path strings, no set of seen objects.
 * False for anything doubtful, including nesting deeper than 64 (perhaps a cycle) and
 * strings with a NUL or a surrogate (perhaps a lone one).
 */
function isPlainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
      return !suspect.test(value);
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
        if (!Object.hasOwn(value, key) || suspect.test(key) || !isPlainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

function checkJson(value: unknown, path: string, walk: { readonly root: string; readonly seen: Set<object> }, depth: number): void {
  const { seen } = walk;
  switch (typeof value) {
    case "string": {
      const problem = textProblem(value);
      if (problem) throw new ValidationError(path, problem);
      return;
    }
    case "boolean":
      return;
    case "number":
      if (!Number.isFinite(value)) throw new ValidationError(path, `${value} is not valid JSON`);
      return;
    case "object": {
      if (value === null) return;
      if (seen.has(value)) throw new ValidationError(path, "is a circular reference");
      if (depth >= maxPayloadDepth) throw new ValidationError(walk.root, `nests deeper than ${maxPayloadDepth} levels of arrays and objects`);
      seen.add(value);
      if (Array.isArray(value)) {
        value.forEach((item, i) => checkJson(item, `${path}[${i}]`, walk, depth + 1));
      } else {
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) {
          const name = (value as { constructor?: { name?: string } }).constructor?.name ?? "an object with a prototype";
          throw new ValidationError(path, `is a ${name}; it must be plain JSON (convert it first, e.g. a Date to an ISO string)`);
        }
        for (const [key, item] of Object.entries(value)) {
          const problem = textProblem(key);
          if (problem) throw new ValidationError(`${path}${member(key)}`, `key ${problem}`);
          checkJson(item, `${path}${member(key)}`, walk, depth + 1);
        }
      }
      seen.delete(value);
      return;
    }
    default:
      throw new ValidationError(path, `is ${value === undefined ? "undefined" : `a ${typeof value}`}, which is not JSON`);
  }
}

/** A key in a path: `.name`, or `["odd key"]` with JSON escapes for anything else. */
export function member(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
