// @ts-check
// The JSON checks of src/payload.ts (serialisePayload) in plain JavaScript, for the thread
// or child process of an isolated handler (isolated-entry.js), which loads no TypeScript:
// ctx.progress() must refuse a bad value at once, in the handler's own realm, with the
// same message the in-process ctx gives. src/worker/isolated-json.test.ts holds the two to
// the same answers.

/** Deepest nesting accepted (payload.ts's maxPayloadDepth). */
const maxDepth = 1000;

/**
 * A ValidationError as this realm can make one: errand's class cannot be loaded here, so
 * an Error with its name, code and field (check `error.code === "invalid_argument"`).
 * @param {string} field
 * @param {string} message
 */
export function validationError(field, message) {
  return Object.assign(new Error(`${field}: ${message}`), { name: "ValidationError", code: "invalid_argument", field });
}

/**
 * `value` as JSON text; throws a ValidationError naming the path when it would not come
 * back unchanged from the database, or when it is over `maxBytes` (ending with `advice`).
 * @param {unknown} value
 * @param {number} maxBytes
 * @param {string} field
 * @param {string} advice
 * @returns {string}
 */
export function checkedJson(value, maxBytes, field, advice) {
  check(value, field, field, new Set(), 0);
  const text = /** @type {string} */ (JSON.stringify(value));
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes) throw validationError(field, `is ${bytes} bytes of JSON, over the limit of ${maxBytes}; ${advice}`);
  return text;
}

/** @param {string} text */
function textProblem(text) {
  if (text.includes("\u0000")) return "contains a \\u0000 character, which PostgreSQL cannot store";
  const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.exec(text);
  if (lone) return `contains half of a surrogate pair (\\u${lone[0].charCodeAt(0).toString(16)} at index ${lone.index}), which is not valid Unicode`;
  return undefined;
}

/** @param {string} key */
function member(key) {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/**
 * @param {unknown} value
 * @param {string} path
 * @param {string} root
 * @param {Set<object>} seen
 * @param {number} depth
 */
function check(value, path, root, seen, depth) {
  switch (typeof value) {
    case "string": {
      const problem = textProblem(value);
      if (problem) throw validationError(path, problem);
      return;
    }
    case "boolean":
      return;
    case "number":
      if (!Number.isFinite(value)) throw validationError(path, `${value} is not valid JSON`);
      return;
    case "object": {
      if (value === null) return;
      if (seen.has(value)) throw validationError(path, "is a circular reference");
      if (depth >= maxDepth) throw validationError(root, `nests deeper than ${maxDepth} levels of arrays and objects`);
      seen.add(value);
      if (Array.isArray(value)) {
        value.forEach((item, i) => check(item, `${path}[${i}]`, root, seen, depth + 1));
      } else {
        const proto = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) {
          const name = /** @type {{ constructor?: { name?: string } }} */ (value).constructor?.name ?? "an object with a prototype";
          throw validationError(path, `is a ${name}; it must be plain JSON (convert it first, e.g. a Date to an ISO string)`);
        }
        for (const [key, item] of Object.entries(value)) {
          const problem = textProblem(key);
          if (problem) throw validationError(`${path}${member(key)}`, `key ${problem}`);
          check(item, `${path}${member(key)}`, root, seen, depth + 1);
        }
      }
      seen.delete(value);
      return;
    }
    default:
      throw validationError(path, `is ${value === undefined ? "undefined" : `a ${typeof value}`}, which is not JSON`);
  }
}
