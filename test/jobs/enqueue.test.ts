import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Errand, type StandardSchemaV1, ValidationError, defineJobs, json } from "../../src/index.js";
import { openTestErrand } from "../../src/testing/index.js";
import { testErrand, useTestErrand } from "../support/db.js";

const t = useTestErrand();

describe("enqueue", () => {
  it("inserts a ready job with the seed's defaults", async () => {
    const { id, duplicate } = await t.errand.enqueue("send_receipt", { order_id: 1042 });
    expect(duplicate).toBe(false);
    const job = await t.errand.getJob(id);
    expect(job).toMatchObject({ kind: "send_receipt", payload: { order_id: 1042 }, status: "ready", attempts: 0, maxAttempts: 8, priority: 0 });
  });

  it("commits with the caller's transaction and vanishes with its rollback", async () => {
    await t.sql(`CREATE TABLE ${t.schema}.orders (id int PRIMARY KEY, total int)`);
    const kept = await t.inTransaction(async (client) => {
      await client.query(`INSERT INTO ${t.schema}.orders (id, total) VALUES (1042, 59000)`);
      return t.errand.enqueue("send_receipt", { order_id: 1042 }, { db: client });
    });
    const dropped = await t.inTransaction(async (client) => {
      await client.query(`INSERT INTO ${t.schema}.orders (id, total) VALUES (1043, 100)`);
      return t.errand.enqueue("send_receipt", { order_id: 1043 }, { db: client });
    }, false);
    expect(await t.errand.getJob(kept.id)).not.toBeNull();
    expect(await t.errand.getJob(dropped.id)).toBeNull();
    expect(await t.sql(`SELECT id FROM ${t.schema}.orders ORDER BY id`)).toEqual([{ id: 1042 }]);
  });

  it("runs the seed's own SQL verbatim with search_path set to errand's schema", async () => {
    await t.sql(`CREATE TABLE ${t.schema}.orders (id int PRIMARY KEY, total int)`);
    await t.inTransaction(async (client) => {
      await client.query(`SET LOCAL search_path TO ${t.schema}`);
      await client.query("INSERT INTO orders (id, total) VALUES (1042, 59000)");
      await client.query(`INSERT INTO jobs (kind, payload, dedupe_key)
VALUES ('send_receipt', '{"order_id": 1042}', 'receipt:1042')
ON CONFLICT (dedupe_key) DO NOTHING`);
      await client.query(`INSERT INTO jobs (kind, payload, dedupe_key)
VALUES ('send_receipt', '{"order_id": 1042}', 'receipt:1042')
ON CONFLICT (dedupe_key) DO NOTHING`);
    });
    const rows = await t.sql<{ kind: string; status: string; max_attempts: number }>(`SELECT kind, status, max_attempts FROM ${t.schema}.all_jobs`);
    expect(rows).toEqual([{ kind: "send_receipt", status: "ready", max_attempts: 8 }]);
  });

  it("accepts a plain-SQL enqueue of kind and payload alone", async () => {
    await t.sql(`INSERT INTO ${t.schema}.jobs (kind, payload) VALUES ('resize', '{"user_id": 7}')`);
    const [row] = await t.sql<{ status: string; attempts: number; due: boolean }>(`SELECT status, attempts, run_at <= now() AS due FROM ${t.schema}.all_jobs`);
    expect(row).toEqual({ status: "ready", attempts: 0, due: true });
  });

  it("returns the existing job for a duplicate dedupe key", async () => {
    const first = await t.errand.enqueue("send_receipt", { order_id: 1 }, { dedupeKey: "receipt:1" });
    const second = await t.errand.enqueue("send_receipt", { order_id: 1 }, { dedupeKey: "receipt:1" });
    expect(second).toEqual({ id: first.id, duplicate: true });
    expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: 1 }]);
  });

  it("keeps one row under 20 concurrent enqueues of one dedupe key", async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => t.errand.enqueue("send_receipt", { order_id: 9 }, { dedupeKey: "receipt:9" })));
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
    expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: 1 }]);
  });

  it("enqueues many jobs in one call, in order, deduping within the batch", async () => {
    const specs = Array.from({ length: 1000 }, (_, i) => ({ kind: "resize", payload: { n: i } }));
    const results = await t.errand.enqueueMany([...specs, { kind: "email", payload: {}, dedupeKey: "k" }, { kind: "email", payload: {}, dedupeKey: "k" }]);
    expect(results).toHaveLength(1002);
    expect(results.at(-1)).toEqual({ id: results.at(-2)!.id, duplicate: true });
    const rows = await t.sql<{ id: string; n: number }>(`SELECT id::text, (payload->>'n')::int AS n FROM ${t.schema}.all_jobs j WHERE kind = 'resize' ORDER BY j.id`);
    expect(rows.map((r) => r.n)).toEqual(specs.map((_, i) => i));
    expect(rows.map((r) => r.id)).toEqual(results.slice(0, 1000).map((r) => r.id));
  });

  it("returns each job's own id when batches without dedupe keys run side by side", async () => {
    // Four batches at once: on PostgreSQL their ids interleave; each result must still
    // be the id of the job made from the spec at that position.
    const batches = await Promise.all(
      [0, 1, 2, 3].map((b) => t.errand.enqueueMany(Array.from({ length: 400 }, (_, i) => ({ kind: "k", payload: { b, i } })))),
    );
    const rows = await t.sql<{ id: string; payload: { b: number; i: number } }>(`SELECT id::text, payload FROM ${t.schema}.all_jobs`);
    const byId = new Map(rows.map((r) => [r.id, r.payload]));
    expect(rows).toHaveLength(1600);
    batches.forEach((results, b) =>
      results.forEach((result, i) => {
        expect(result.duplicate).toBe(false);
        expect(byId.get(result.id)).toEqual({ b, i });
      }),
    );
  });

  it("sets run_at from delay, runAt, priority and max attempts", async () => {
    const at = new Date(Date.now() + 3_600_000);
    const a = await t.errand.enqueue("k", {}, { delay: 60_000, priority: 5, maxAttempts: 3 });
    const b = await t.errand.enqueue("k", {}, { runAt: at });
    const [row] = await t.sql<{ secs: number }>(`SELECT extract(epoch FROM run_at - now())::float8 AS secs FROM ${t.schema}.all_jobs WHERE id = $1`, [a.id]);
    expect(row!.secs).toBeGreaterThan(55);
    expect(row!.secs).toBeLessThanOrEqual(60);
    expect(await t.errand.getJob(a.id)).toMatchObject({ priority: 5, maxAttempts: 3 });
    expect((await t.errand.getJob(b.id))!.runAt.getTime()).toBe(at.getTime());
  });

  it("uses per-kind defaults for max attempts and priority", async () => {
    const custom = await testErrand({ kinds: { email: { maxAttempts: 3, priority: 2 } } });
    try {
      const { id } = await custom.errand.enqueue("email", {});
      expect(await custom.errand.getJob(id)).toMatchObject({ maxAttempts: 3, priority: 2 });
    } finally {
      await custom.cleanup();
    }
  });

  describe("rejects bad input naming the field, writing nothing", () => {
    const cases: [string, () => Promise<unknown>, RegExp][] = [
      ["a Date in the payload", () => t.errand.enqueue("k", { at: new Date() }), /payload\.at: is a Date/],
      ["a function", () => t.errand.enqueue("k", { f: () => 1 }), /payload\.f: is a function/],
      ["undefined inside", () => t.errand.enqueue("k", { a: [1, undefined] }), /payload\.a\[1\]: is undefined/],
      ["a BigInt", () => t.errand.enqueue("k", { n: 1n }), /payload\.n: is a bigint/],
      ["NaN", () => t.errand.enqueue("k", { n: Number.NaN }), /payload\.n: NaN is not valid JSON/],
      ["a cycle", () => { const a: Record<string, unknown> = {}; a.self = a; return t.errand.enqueue("k", a); }, /payload\.self: is a circular reference/],
      ["a NUL character", () => t.errand.enqueue("k", { s: "a\u0000b" }), /payload\.s: contains a \\u0000/],
      ["an oversized payload", () => t.errand.enqueue("k", { s: "x".repeat(256 * 1024) }), /payload: is 262152 bytes of JSON, over the limit of 262144/],
      ["a negative delay", () => t.errand.enqueue("k", {}, { delay: -5 }), /delay: must be a number of milliseconds ≥ 0/],
      ["an invalid runAt", () => t.errand.enqueue("k", {}, { runAt: "tomorrow" }), /runAt: must be a Date or an ISO 8601 time/],
      ["zero max attempts", () => t.errand.enqueue("k", {}, { maxAttempts: 0 }), /maxAttempts: must be a positive integer/],
      ["an empty kind", () => t.errand.enqueue("", {}), /kind: must be a non-empty string/],
      ["a misspelt option", () => t.errand.enqueue("k", {}, { dedupKey: "x" } as never), /dedupKey: unknown option — did you mean 'dedupeKey'\?/],
      ["one bad job in a batch", () => t.errand.enqueueMany([{ kind: "k", payload: {} }, { kind: "k", payload: { d: new Map() } }]), /jobs\[1\]\.payload\.d: is a Map/],
      ["an impossible runAt", () => t.errand.enqueue("k", {}, { runAt: "2026-02-30T09:00:00Z" }), /runAt: "2026-02-30T09:00:00Z" is not a date: February 2026 has 28 days/],
      ["an impossible runAt in a batch", () => t.errand.enqueueMany([{ kind: "k", payload: {} }, { kind: "k", payload: {}, runAt: "2026-04-31" }]), /jobs\[1\]\.runAt: .*April 2026 has 30 days/],
      ["a runAt past the year 9999", () => t.errand.enqueue("k", {}, { runAt: new Date(8.64e15) }), /runAt: must be from the year 1970 to 9999/],
      ["a delay past 100 years", () => t.errand.enqueue("k", {}, { delay: 1e21 }), /delay: must be at most .* \(100 years\)/],
      ["a \\u0000 in a payload key", () => t.errand.enqueue("k", { "a\u0000": 1 }), /payload\["a\\u0000"\]: key contains a \\u0000/],
      ["a lone surrogate in a payload key, in a batch", () => t.errand.enqueueMany([{ kind: "k", payload: {} }, { kind: "k", payload: { ok: { ["\ud83d"]: 1 } } }]), /jobs\[1\]\.payload\.ok\["\\ud83d"\]: key contains half of a surrogate pair/],
      ["a lone surrogate in a payload string", () => t.errand.enqueue("k", { s: "ok \udc00" }), /payload\.s: contains half of a surrogate pair/],
      ["nesting 10,000 levels deep", () => { let p: unknown = 1; for (let i = 0; i < 10_000; i++) p = [p]; return t.errand.enqueue("k", p); }, /payload: nests deeper than 1000 levels/],
      ["a 5,000-character dedupe key", () => t.errand.enqueue("k", {}, { dedupeKey: "x".repeat(5000) }), /dedupeKey: must be at most 1000 bytes of UTF-8 \(got 5000\)/],
      ["a \\u0000 in a dedupe key", () => t.errand.enqueue("k", {}, { dedupeKey: "a\u0000" }), /dedupeKey: contains a \\u0000/],
      ["a \\u0000 in a kind, in a batch", () => t.errand.enqueueMany([{ kind: "k", payload: {} }, { kind: "k\u0000", payload: {} }]), /jobs\[1\]\.kind: contains a \\u0000/],
      ["a lone surrogate in a kind", () => t.errand.enqueue("k\ud800", {}), /kind: contains half of a surrogate pair/],
      ["a batch of one naming its job", () => t.errand.enqueueMany([{ kind: "k", payload: { n: Number.NaN } }]), /jobs\[0\]\.payload\.n: NaN/],
    ];
    it.each(cases)("%s", async (_, call, message) => {
      const error = await call().then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(message);
      expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: 0 }]);
    });
  });

  it("stores what the limits allow: a 1,000-byte dedupe key of 4-byte characters, 1,000 levels of nesting, a leap day, a null payload", async () => {
    const key = "😀".repeat(250);
    let deep: unknown = "leaf";
    for (let i = 0; i < 1000; i++) deep = { a: deep };
    const first = await t.errand.enqueue("k", deep, { dedupeKey: key, runAt: "2028-02-29T12:00:00+01:00" });
    expect(await t.errand.enqueue("k", {}, { dedupeKey: key })).toEqual({ id: first.id, duplicate: true });
    const job = await t.errand.getJob(first.id);
    expect(job!.payload).toEqual(deep);
    expect(job!.dedupeKey).toBe(key);
    expect(job!.runAt.toISOString()).toBe("2028-02-29T11:00:00.000Z");
    const [nullPayload] = await t.errand.enqueueMany([{ kind: "k", payload: null, retry: { baseDelayMs: 5 } }]);
    expect(await t.sql(`SELECT payload IS NULL AS missing, jsonb_typeof(payload) AS type, retry ->> 'baseDelayMs' AS base FROM ${t.schema}.all_jobs WHERE id = $1`, [nullPayload!.id])).toEqual([
      { missing: false, type: "null", base: "5" },
    ]);
  });

  it("refuses a schema whose derived names would not fit PostgreSQL's 63 bytes, before creating anything", async () => {
    const long = t.schema.padEnd(52, "x"); // errand_jobs_<schema> would be 64 bytes
    await expect(Errand.open({ db: t.db, schema: long })).rejects.toThrow(/schema: must be at most 51 characters/);
    expect(await t.sql(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1`, [long])).toEqual([{ n: 0 }]);
    const longest = t.schema.padEnd(51, "y"); // works end to end, including the notify on enqueue
    const errand = await Errand.open({ db: t.db, schema: longest });
    try {
      const { id } = await errand.enqueue("k", {});
      expect(await errand.getJob(id)).toMatchObject({ kind: "k", status: "ready" });
    } finally {
      await errand.close();
      await t.sql(`DROP SCHEMA ${longest} CASCADE`);
    }
  });

  it("validates Errand.fromDriver's options as Errand.open does", () => {
    const driver = t.errand.driver;
    expect(() => Errand.fromDriver(driver, { maxPayloadBytes: -1 })).toThrow(/maxPayloadBytes: must be a positive integer/);
    expect(() => Errand.fromDriver(driver, { schema: "no such; schema" })).toThrow(/schema/);
    expect(() => Errand.fromDriver(driver, { kind: {} } as never)).toThrow(/kind: unknown option — did you mean 'kinds'\?/);
  });

  it("honours a configured payload limit", async () => {
    const small = await testErrand({ maxPayloadBytes: 10 });
    try {
      await expect(small.errand.enqueue("k", { s: "0123456789" })).rejects.toThrow(/over the limit of 10/);
    } finally {
      await small.cleanup();
    }
  });
});

describe("typed jobs (defineJobs)", () => {
  // A hand-written Standard Schema: what any validation library hands errand.
  const welcome: StandardSchemaV1<unknown, { userId: number }> = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: (value) => {
        const userId = (value as { userId?: unknown } | null)?.userId;
        return Number.isInteger(userId) ? { value: { userId: userId as number } } : { issues: [{ message: "must be an integer", path: [{ key: "userId" }] }] };
      },
    },
  };
  // Asynchronous, and normalising: the output is what gets stored.
  const signup: StandardSchemaV1<unknown, { email: string }> = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: async (value) => {
        const email = (value as { email?: unknown } | null)?.email;
        return typeof email === "string" && email.includes("@") ? { value: { email: email.trim().toLowerCase() } } : { issues: [{ message: "is not an email address", path: ["email"] }] };
      },
    },
  };
  const jobs = defineJobs({
    send_welcome_email: { payload: welcome, maxAttempts: 5, priority: 3 },
    confirm_signup: { payload: signup },
    resize_avatar: { payload: z.object({ userId: z.number().int(), sizes: z.array(z.number().int().positive()) }) },
    sweep: { payload: json<{ olderThanDays?: number }>() },
  });

  const count = async () => (await t.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`))[0]!.n;

  it("refuses what a kind's schema refuses, naming the field, and writes nothing", async () => {
    const errand = await Errand.open({ db: t.db, schema: t.schema, jobs, migrate: false });
    try {
      await expect(errand.enqueue("send_welcome_email", { userId: 1.5 })).rejects.toThrow(/^payload\.userId: must be an integer$/);
      await expect(errand.enqueue("confirm_signup", { email: "nobody" })).rejects.toThrow(/^payload\.email: is not an email address$/);
      // zod, through the same interface; a plain-JS caller's wrong type is caught too.
      await expect(errand.enqueue("resize_avatar", { userId: "7" } as never)).rejects.toThrow(/^payload\.userId: .*expected number.* \(and 1 more issue\)$/);
      const batch = errand.enqueueMany([
        { kind: "sweep" },
        { kind: "send_welcome_email", payload: { userId: 1 } },
        { kind: "resize_avatar", payload: { userId: 1, sizes: [64, -1] } },
      ]);
      const error = await batch.then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe("jobs[2].payload.sizes[1]");
      expect(await count()).toBe(0);
    } finally {
      await errand.close();
    }
  });

  it("stores the schema's output, and takes each kind's settings from the definition", async () => {
    const errand = await Errand.open({ db: t.db, schema: t.schema, jobs, migrate: false });
    try {
      const avatar = { userId: 7, sizes: [64], note: "not in the schema" };
      const [a, b, c] = await errand.enqueueMany([
        { kind: "resize_avatar", payload: avatar },
        { kind: "confirm_signup", payload: { email: "  Ada@Example.COM " } },
        { kind: "sweep", payload: { olderThanDays: 3 } },
      ]);
      expect((await errand.getJob(a!.id))!.payload).toEqual({ userId: 7, sizes: [64] });
      expect((await errand.getJob(b!.id))!.payload).toEqual({ email: "ada@example.com" });
      expect((await errand.getJob(c!.id))!.payload).toEqual({ olderThanDays: 3 });
      const { id } = await errand.enqueue("send_welcome_email", { userId: 42 });
      const job = await errand.getJob(id);
      expect(job).toMatchObject({ kind: "send_welcome_email", payload: { userId: 42 }, maxAttempts: 5, priority: 3 });
      if (job?.kind === "send_welcome_email") expect(job.payload.userId + 1).toBe(43);
    } finally {
      await errand.close();
    }
  });

  it("checks schedules' payloads with the kind's schema when they are declared", async () => {
    const errand = await openTestErrand({ jobs, db: t.db });
    try {
      const declared = errand.schedules.declare([
        { name: "sweep", cron: "@daily", kind: "sweep" },
        { name: "thumbs", cron: "@hourly", kind: "resize_avatar", payload: { userId: 1, sizes: [0] } },
      ]);
      await expect(declared).rejects.toThrow(/^schedules\[1\]\.payload\.sizes\[0\]: /);
      expect(await errand.schedules.list()).toEqual([]);
      const [info] = await errand.schedules.declare([{ name: "signup", cron: "@daily", kind: "confirm_signup", payload: { email: " A@B.C" } }]);
      expect(info).toMatchObject({ name: "signup", kind: "confirm_signup", payload: { email: "a@b.c" } });
    } finally {
      await errand.close();
    }
  });

  it("refuses a bad definition by name", async () => {
    expect(() => defineJobs({ x: { payload: {} } } as never)).toThrow(/^jobs\.x\.payload: must be json<T>\(\) or a Standard Schema/);
    expect(() => defineJobs({ x: { payload: json(), maxAttempt: 3 } } as never)).toThrow(/^jobs\.x\.maxAttempt: unknown option — did you mean 'maxAttempts'\?/);
    expect(() => defineJobs({ x: null } as never)).toThrow(/^jobs\.x: must be an object/);
    expect(() => defineJobs({ x: { payload: json<{ n: number }>(), maxAttempts: 0 } })).toThrow(/^jobs\.x\.maxAttempts: must be a positive integer/);
    const handMade = { kinds: { x: { leaseMs: -1 } }, schemas: new Map() };
    await expect(Errand.open({ db: t.db, schema: t.schema, jobs: handMade, migrate: false })).rejects.toThrow(/^jobs\.x\.leaseMs: must be a positive number/);
    await expect(Errand.open({ db: t.db, schema: t.schema, jobs, kinds: {}, migrate: false })).rejects.toThrow(/^kinds: give jobs or kinds, not both/);
    await expect(Errand.open({ db: t.db, schema: t.schema, jobs: { kinds: {} } as never, migrate: false })).rejects.toThrow(/^jobs: must be what defineJobs\(\) returns/);
  });
});
