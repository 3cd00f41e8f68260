import { describe, expect, it } from "vitest";
import { ValidationError } from "./errors.js";
import { checkDate, checkId, checkText, closest, isJobId, textProblem } from "./validate.js";

describe("checkDate", () => {
  it("accepts ISO 8601 times and Dates, as UTC ISO strings", () => {
    expect(checkDate("2026-12-01T09:00:00Z", "runAt")).toBe("2026-12-01T09:00:00.000Z");
    expect(checkDate("2026-12-01T09:00:00.123456+02:00", "runAt")).toBe("2026-12-01T07:00:00.123Z");
    expect(checkDate("2026-12-01 09:00-0130", "runAt")).toBe("2026-12-01T10:30:00.000Z");
    expect(checkDate("2028-02-29", "runAt")).toBe("2028-02-29T00:00:00.000Z");
    expect(checkDate("2000-02-29T00:00:00Z", "runAt")).toBe("2000-02-29T00:00:00.000Z");
    expect(checkDate(new Date(Date.UTC(2026, 0, 2)), "runAt")).toBe("2026-01-02T00:00:00.000Z");
    expect(checkDate("1970-01-01T00:00:00Z", "runAt")).toBe("1970-01-01T00:00:00.000Z");
    expect(checkDate("9999-12-31T23:59:59.999Z", "runAt")).toBe("9999-12-31T23:59:59.999Z");
  });

  it("reads a time without a zone as local time, as JavaScript does", () => {
    expect(checkDate("2026-06-01T09:30:00", "runAt")).toBe(new Date(2026, 5, 1, 9, 30).toISOString());
  });

  it.each([
    ["2026-02-30T09:00:00Z", /"2026-02-30T09:00:00Z" is not a date: February 2026 has 28 days/],
    ["2026-02-29", /February 2026 has 28 days/],
    ["1900-02-29", /February 1900 has 28 days/],
    ["2026-04-31T00:00:00Z", /April 2026 has 30 days/],
    ["2026-13-01", /there is no month 13/],
    ["2026-00-10", /there is no month 0/],
    ["2026-01-00", /January 2026 has 31 days/],
    ["2026-01-01T24:00:00Z", /not a time of day/],
    ["2026-01-01T10:60Z", /not a time of day/],
    ["2026-01-01T10:00:60Z", /not a time of day/],
    ["2026-01-01T10:00:00+24:00", /impossible UTC offset/],
    ["tomorrow", /must be a Date or an ISO 8601 time/],
    ["March 1, 2026", /must be a Date or an ISO 8601 time/],
    ["2026-1-1", /must be a Date or an ISO 8601 time/],
    ["0001-06-01T00:00:00Z", /from the year 1970 to 9999/],
    ["1970-01-01T00:30:00+01:00", /from the year 1970 to 9999/],
  ])("refuses %j", (text, message) => {
    expect(() => checkDate(text, "runAt")).toThrow(ValidationError);
    expect(() => checkDate(text, "runAt")).toThrow(message);
  });

  it("refuses invalid and out-of-range Dates and other types", () => {
    expect(() => checkDate(new Date(Number.NaN), "runAt")).toThrow(/runAt: must be a Date or an ISO 8601 time/);
    expect(() => checkDate(new Date(8.64e15), "runAt")).toThrow(/from the year 1970 to 9999/);
    expect(() => checkDate(1_700_000_000_000, "runAt")).toThrow(/must be a Date or an ISO 8601 time/);
  });
});

describe("job ids", () => {
  it("are positive integers that fit a bigint", () => {
    expect(isJobId("1")).toBe(true);
    expect(isJobId("9223372036854775807")).toBe(true);
    expect(isJobId("9223372036854775808")).toBe(false);
    expect(isJobId("99999999999999999999")).toBe(false);
    expect(isJobId("0")).toBe(false);
    expect(isJobId("01")).toBe(false);
    expect(isJobId("-1")).toBe(false);
    expect(checkId(42, "id")).toBe("42");
    expect(() => checkId(1.5, "id")).toThrow(/id: must be a job id/);
    expect(() => checkId(2 ** 60, "id")).toThrow(/id: must be a job id/);
  });
});

describe("text", () => {
  it("names what PostgreSQL cannot store: a NUL, half of a surrogate pair", () => {
    expect(textProblem("plain ✓ 😀")).toBeUndefined();
    expect(textProblem("a\u0000b")).toMatch(/\\u0000/);
    expect(textProblem("a\ud800b")).toMatch(/\\ud800 at index 1/);
    expect(textProblem("\udc00")).toMatch(/\\udc00 at index 0/);
    expect(textProblem("😀".slice(0, 1))).toMatch(/surrogate/);
  });

  it("bounds length in characters and in bytes", () => {
    expect(checkText("é".repeat(500), "k", { maxBytes: 1000 })).toHaveLength(500);
    expect(() => checkText("é".repeat(501), "k", { maxBytes: 1000 })).toThrow(/k: must be at most 1000 bytes of UTF-8 \(got 1002\)/);
    expect(() => checkText("abc", "k", { maxLength: 2 })).toThrow(/k: must be at most 2 characters/);
    expect(() => checkText("", "k", {})).toThrow(/k: must be a non-empty string/);
    expect(() => checkText(7, "k", {})).toThrow(/k: must be a non-empty string \(got 7\)/);
  });
});

describe("closest", () => {
  it("suggests a near name and nothing for a far one", () => {
    expect(closest("dedupKey", ["dedupeKey", "delay"])).toBe("dedupeKey");
    expect(closest("frobnicate", ["dedupeKey", "delay"])).toBeUndefined();
  });
});
