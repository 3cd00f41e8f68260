import { describe, expect, it } from "vitest";
import { ValidationError } from "../errors.js";
import { serialisePayload } from "../payload.js";
import { checkedJson } from "./isolated-json.js";

/** What a check came to: the JSON text, or the error's message and field. */
function outcome(check: () => string): { text: string } | { message: string; field: string; name: string } {
  try {
    return { text: check() };
  } catch (error) {
    const e = error as ValidationError;
    return { message: e.message, field: e.field, name: e.name };
  }
}

const cyclic: Record<string, unknown> = { a: 1 };
cyclic.self = cyclic;
let deep: unknown = 1;
for (let i = 0; i < 1001; i++) deep = [deep];

const values: readonly unknown[] = [
  0, 42.5, "text", true, null, [], {}, { done: 3, of: 10, stage: "upload" }, [1, "two", { three: [3] }], Object.create(null) as unknown,
  undefined, () => {}, Symbol("s"), 10n, NaN, Infinity, -Infinity,
  new Date(0), new Map(), new (class Cursor {})(), { at: new Date(0) }, [1, undefined], { f: () => {} },
  "nul\u0000", { "key\u0000": 1 }, "half \ud800", { "odd key": ["\udc00"] }, cyclic, deep,
  { big: "x".repeat(5000) }, "é".repeat(2100),
];

describe("the isolate's JSON check", () => {
  it("gives serialisePayload's answer for every value: the same text, or the same error naming the same path", () => {
    for (const [i, value] of values.entries()) {
      const expected = outcome(() => serialisePayload(value, 4096, "progress", "report a figure or a small object, not data"));
      const actual = outcome(() => checkedJson(value, 4096, "progress", "report a figure or a small object, not data"));
      expect(actual, `values[${i}]`).toEqual(expected);
    }
  });
});
