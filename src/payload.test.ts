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
});
