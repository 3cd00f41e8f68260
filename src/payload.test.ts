import { describe, expect, it } from "vitest";
import { serialisePayload } from "./payload.js";

describe("serialisePayload", () => {
  it("accepts plain JSON of any depth, including deeper than the quick check goes", () => {
    let deep: unknown = { leaf: [1, "two", true, null] };
    for (let i = 0; i < 200; i++) deep = { next: deep };
    expect(JSON.parse(serialisePayload(deep, 1 << 20))).toEqual(deep);
    expect(serialisePayload(Object.assign(Object.create(null) as object, { a: 1 }), 100)).toBe('{"a":1}');
  });

  it("names the path of what is not JSON, deep down or behind a cycle", () => {
    expect(() => serialisePayload({ a: [{ b: new Map() }] }, 1000)).toThrow(/payload\.a\[0\]\.b: is a Map/);
    expect(() => serialisePayload({ a: [1, Number.NaN] }, 1000)).toThrow(/payload\.a\[1\]: NaN is not valid JSON/);
    expect(() => serialisePayload({ s: "x\u0000" }, 1000)).toThrow(/payload\.s: contains a \\u0000/);
    const ring: Record<string, unknown> = {};
    let node = ring;
    for (let i = 0; i < 100; i++) node = node.next = {};
    node.back = ring;
    expect(() => serialisePayload(ring, 1 << 20)).toThrow(/is a circular reference/);
  });

  it("refuses what PostgreSQL's jsonb cannot store, in keys as in strings, naming the path", () => {
    expect(() => serialisePayload({ a: { "b\u0000": 1 } }, 1000)).toThrow(/payload\.a\["b\\u0000"\]: key contains a \\u0000/);
    expect(() => serialisePayload({ ["\ud800"]: 1 }, 1000)).toThrow(/payload\["\\ud800"\]: key contains half of a surrogate pair/);
    expect(() => serialisePayload({ list: ["ok", "x\udc00"] }, 1000)).toThrow(/payload\.list\[1\]: contains half of a surrogate pair \(\\udc00 at index 1\)/);
    expect(serialisePayload({ "emoji 😀": "😀", "user-id": 1 }, 1000)).toBe('{"emoji 😀":"😀","user-id":1}');
  });

  it("accepts nesting to 1,000 levels and names the limit past it, without overflowing the stack", () => {
    const nest = (levels: number) => {
      let value: unknown = 1;
      for (let i = 0; i < levels; i++) value = i % 2 ? { a: value } : [value];
      return value;
    };
    expect(() => serialisePayload(nest(1000), 1 << 20)).not.toThrow();
    expect(() => serialisePayload(nest(1001), 1 << 20)).toThrow(/^payload: nests deeper than 1000 levels/);
    expect(() => serialisePayload(nest(100_000), 1 << 22, "jobs[2].payload")).toThrow(/^jobs\[2\]\.payload: nests deeper than 1000 levels/);
  });
});
