import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ValidationError } from "../../src/index.js";
import { createDashboard } from "../../src/dashboard/index.js";
import { cliDatabase, errandCli } from "../support/cli.js";
import { type TestErrand, testErrand } from "../support/db.js";
import { dashboardSession } from "../support/dashboard.js";

// Property tests of the doors input comes through: the API's JSON (payloads, options),
// the dashboard's query strings and the CLI's arguments. Each run is a random sample
// (fast-check prints the seed and the smallest failing input); whatever the input, the
// answer is a stored job that reads back unchanged or a ValidationError naming the
// field — never a database error, a RangeError or a 500.

/** Any UTF-16 code unit, favouring the ones that broke things: NUL, lone surrogates, quotes. */
const codeUnit = fc.oneof(
  fc.constantFrom("\u0000", "\ud800", "\udfff", "😀", "é", "\n", '"', "\\", "%", "a"),
  fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
);
const text = (maxLength = 12) => fc.string({ unit: codeUnit, maxLength });

/** Payload candidates: JSON, odd JavaScript values, odd keys. */
const payload = fc.anything({
  key: text(6),
  values: [text(), fc.double(), fc.integer(), fc.boolean(), fc.constant(null)],
  maxDepth: 4,
  maxKeys: 4,
  withDate: true,
  withMap: true,
  withBigInt: true,
  withNullPrototype: true,
  withBoxedValues: true,
  withSparseArray: true,
});

/** A time as a user might write it: often almost ISO, sometimes impossible, sometimes junk. */
const isoParts = fc.record({
  year: fc.oneof(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1969, max: 2100 })),
  month: fc.integer({ min: 0, max: 13 }),
  day: fc.integer({ min: 0, max: 32 }),
  hour: fc.integer({ min: 0, max: 25 }),
  minute: fc.integer({ min: 0, max: 61 }),
  zone: fc.constantFrom("Z", "+02:00", "-0930", "+24:00"),
});
const pad = (n: number, width = 2) => String(n).padStart(width, "0");
const isoText = isoParts.map((p) => `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}T${pad(p.hour)}:${pad(p.minute)}:00${p.zone}`);
const time = fc.oneof(isoText, text(), fc.date({ noInvalidDate: false }));

/** The instant an ISO text names, by an independent route, or null when it names none. */
function oracle(iso: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):00(Z|([+-])(\d{2}):?(\d{2}))$/.exec(iso);
  if (!m) return null;
  const [y, mo, d, h, mi] = [1, 2, 3, 4, 5].map((i) => Number(m[i]));
  const at = new Date(0);
  at.setUTCFullYear(y!, mo! - 1, d);
  at.setUTCHours(h!, mi);
  const rolledOver = at.getUTCFullYear() !== y || at.getUTCMonth() !== mo! - 1 || at.getUTCDate() !== d || at.getUTCHours() !== h || at.getUTCMinutes() !== mi;
  if (rolledOver || (m[8] !== undefined && Number(m[8]) > 23)) return null;
  const offset = m[6] === "Z" ? 0 : (m[7] === "-" ? -1 : 1) * (Number(m[8]) * 60 + Number(m[9])) * 60_000;
  const instant = at.getTime() - offset;
  return instant >= 0 && instant < Date.UTC(10_000, 0, 1) ? instant : null;
}

/** JSON text for a value, as a user would paste it (`{}` for what JSON.stringify refuses, e.g. a BigInt). */
function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "null";
  } catch {
    return "{}";
  }
}

/** Resolves to the value, or to the error if it is a ValidationError; anything else fails the property. */
async function validOrRefused<T>(work: () => Promise<T>): Promise<{ ok: T } | { refused: ValidationError }> {
  try {
    return { ok: await work() };
  } catch (error) {
    if (error instanceof ValidationError) return { refused: error };
    throw error;
  }
}

describe("the API's JSON door", () => {
  let t: TestErrand;
  beforeAll(async () => {
    t = await testErrand();
  });
  afterAll(() => t.cleanup());

  it("stores any payload that is JSON and reads it back unchanged, and refuses the rest with a ValidationError", async () => {
    await fc.assert(
      fc.asyncProperty(payload, async (value) => {
        const outcome = await validOrRefused(() => t.errand.enqueue("fuzz", value));
        if ("refused" in outcome) {
          expect(outcome.refused.field).toMatch(/^payload/);
          return;
        }
        const job = await t.errand.getJob(outcome.ok.id);
        expect(job!.payload).toEqual(JSON.parse(JSON.stringify(value === undefined ? {} : value)));
      }),
      { numRuns: 150 },
    );
  });

  it("takes any kind, dedupe key and options in a batch, or refuses them naming the job", async () => {
    const spec = fc.record(
      {
        kind: fc.oneof(text(), fc.constantFrom("send_receipt", "k".repeat(201))),
        payload: fc.jsonValue({ maxDepth: 2 }),
        dedupeKey: fc.oneof(text(), fc.string({ minLength: 990, maxLength: 1010 }), fc.constantFrom("😀".repeat(250), "😀".repeat(251))),
        runAt: time,
        delay: fc.oneof(fc.double(), fc.integer({ min: 0, max: 10_000 })),
        priority: fc.oneof(fc.integer(), fc.double()),
        maxAttempts: fc.oneof(fc.integer({ min: -1, max: 2_000_000 }), fc.double()),
      },
      { requiredKeys: ["kind", "payload"] },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(spec, { minLength: 1, maxLength: 4 }), async (specs) => {
        const unique = specs.map((s, i) => (s.dedupeKey === undefined ? s : { ...s, dedupeKey: `${t.schema}:${i}:${s.dedupeKey}` }));
        const outcome = await validOrRefused(() => t.errand.enqueueMany(unique));
        if ("refused" in outcome) {
          expect(outcome.refused.field).toMatch(/^jobs\[\d\]\.(kind|payload|dedupeKey|runAt|delay|priority|maxAttempts)/);
          return;
        }
        for (const [i, result] of outcome.ok.entries()) {
          const job = (await t.errand.getJob(result.id))!;
          const given = unique[i]!;
          expect(job.kind).toBe(given.kind);
          if (given.dedupeKey !== undefined) expect(job.dedupeKey).toBe(given.dedupeKey);
          if (typeof given.runAt === "string" && oracle(given.runAt) !== null) expect(job.runAt.getTime()).toBe(oracle(given.runAt));
        }
      }),
      { numRuns: 150 },
    );
  });

  it("accepts exactly the ISO times that name a real instant, and stores that instant", async () => {
    await fc.assert(
      fc.asyncProperty(isoText, async (iso) => {
        const outcome = await validOrRefused(() => t.errand.enqueue("fuzz_time", {}, { runAt: iso }));
        const expected = oracle(iso);
        if ("refused" in outcome) {
          expect(expected, `${iso} was refused: ${outcome.refused.message}`).toBeNull();
          return;
        }
        expect(expected, `${iso} was accepted`).not.toBeNull();
        expect((await t.errand.getJob(outcome.ok.id))!.runAt.getTime()).toBe(expected);
      }),
      { numRuns: 150 },
    );
  });
});

describe("the dashboard's query strings", () => {
  let t: TestErrand;
  beforeAll(async () => {
    t = await testErrand();
    await t.errand.enqueue("email", { to: "a@example.com" }, { dedupeKey: "welcome:1" });
    await t.sql(`INSERT INTO ${t.schema}.jobs (kind, payload, status, run_at, finished_at, last_error) VALUES ('odd', '{}', 'dead', '-infinity', 'infinity', 'boom')`);
  });
  afterAll(() => t.cleanup());

  /** A query value as text, or as raw percent-encoded bytes (NUL, invalid UTF-8, …). */
  const value = fc.oneof(
    text(20).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, "\ufffd"))),
    fc.uint8Array({ maxLength: 8 }).map((bytes) => [...bytes].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("")),
    fc.constantFrom("", "1", "9223372036854775807", "9223372036854775808", "dead", "ready", "email", "welcome%3A1"),
  );

  it("answers every filter with a page or a 400, never a 500", async () => {
    const app = createDashboard(t.errand);
    const s = dashboardSession(app);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("/jobs", "/dead", "/"),
        fc.uniqueArray(fc.tuple(fc.constantFrom("kind", "status", "q", "error", "before", "after", "done", "n", "ids"), value), { selector: ([k]) => k, maxLength: 4 }),
        async (path, params) => {
          const query = params.map(([k, v]) => `${k}=${v}`).join("&");
          const page = await s.get(`${path}${query ? `?${query}` : ""}`);
          expect([200, 400], `${path}?${query}: ${page.status}`).toContain(page.status);
        },
      ),
      { numRuns: 150 },
    );
    for (const id of ["1", "2", "3", "9223372036854775807", "9223372036854775808", "0", "%00"]) {
      expect([200, 400, 404], `/jobs/${id}`).toContain((await s.get(`/jobs/${id}`)).status);
    }
  });
});

describe("the CLI's arguments", () => {
  const db = cliDatabase();
  beforeAll(async () => {
    expect((await errandCli(["migrate", ...db.flags])).code).toBe(0);
  });
  afterAll(() => db.cleanup());

  // Arguments cannot hold a NUL; everything else goes.
  const arg = (maxLength = 12) => text(maxLength).map((s) => s.replaceAll("\u0000", ""));
  const flag = fc.oneof(
    fc.tuple(fc.constant("--run-at"), fc.oneof(isoText, arg())),
    fc.tuple(fc.constant("--delay"), fc.oneof(fc.double().map(String), arg())),
    fc.tuple(fc.constant("--max-attempts"), fc.oneof(fc.integer().map(String), arg())),
    fc.tuple(fc.constant("--priority"), fc.oneof(fc.double().map(String), fc.integer().map(String))),
    fc.tuple(fc.constant("--dedupe-key"), fc.oneof(arg(), fc.constant("x".repeat(1001)))),
  );

  it("enqueue prints an id (exit 0) or one line naming the bad argument (exit 2), never a crash", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(arg(), fc.constant("send_receipt")),
        fc.oneof(payload.map(jsonText), arg()).map((s) => s.replaceAll("\u0000", "")),
        fc.uniqueArray(flag, { selector: ([name]) => name, maxLength: 3 }),
        async (kind, json, flags) => {
          const result = await errandCli(["enqueue", ...flags.flat(), ...db.flags, "--", kind, json]);
          const shown = `errand enqueue ${JSON.stringify([kind, json, ...flags.flat()])} → ${result.code}: ${result.stderr}`;
          expect([0, 2], shown).toContain(result.code);
          if (result.code === 0) expect(result.stdout, shown).toMatch(/^\d+\n$/);
          else expect(result.stderr, shown).toMatch(/^errand: [^\n]+\n$/);
        },
      ),
      { numRuns: 12 },
    );
  }, 240_000);
});
