import { CamelCasePlugin, Kysely, PostgresDialect } from "kysely";
import { sql as drizzleSql } from "drizzle-orm";
import { drizzle as drizzleNodePg } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePostgresJs } from "drizzle-orm/postgres-js";
import pg from "pg";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SqlClient, fromDrizzle, fromKysely, fromPostgresJs } from "../../src/index.js";
import { useTestErrand } from "../support/db.js";

// PostgreSQL only: enqueue joins transactions opened by postgres.js, Kysely and Drizzle.
const t = useTestErrand();

const url = process.env.ERRAND_TEST_URL!;
const rollback = new Error("roll back");

/** Runs `fn` in the library's transaction; commits, or rolls back by throwing. */
type InTransaction = (fn: (db: SqlClient) => Promise<unknown>, commit: boolean) => Promise<void>;

function rollingBack(transaction: Promise<unknown>): Promise<void> {
  return transaction.then(
    () => undefined,
    (error: unknown) => {
      if (error !== rollback) throw error;
    },
  );
}

const payload = { note: `O'Brien said "hi" -- $1 \\ ' ; DROP TABLE x`, nested: { list: [1, "two", null, true] }, emoji: "✓" };

function adapterTests(inTransaction: InTransaction): void {
  it("a handler's ctx.complete(db) marks its job done in the library's transaction, with the application's row", async () => {
    await t.sql(`CREATE TABLE ${t.schema}.credits (order_id int PRIMARY KEY)`);
    const { id } = await t.errand.enqueue("credit", { orderId: 7 });
    const worker = t.errand.worker({
      handlers: {
        credit: ({ orderId }: { orderId: number }, ctx) =>
          inTransaction(async (db) => {
            await db.query(`INSERT INTO ${t.schema}.credits (order_id) VALUES ($1)`, [orderId]);
            await ctx.complete(db);
          }, true),
      },
    });
    await worker.runOnce();
    expect(await t.errand.getJob(id)).toMatchObject({ status: "done", attempts: 1, lockedBy: null });
    expect(await t.sql(`SELECT order_id FROM ${t.schema}.credits`)).toEqual([{ order_id: 7 }]);
  });

  it("commit keeps the job and the application's row, with the payload intact", async () => {
    await t.sql(`CREATE TABLE ${t.schema}.orders (id int PRIMARY KEY, note text)`);
    let id = "";
    await inTransaction(async (db) => {
      await db.query(`INSERT INTO ${t.schema}.orders (id, note) VALUES ($1, $2)`, [1042, payload.note]);
      id = (await t.errand.enqueue("send_receipt", payload, { db })).id;
    }, true);
    expect(await t.errand.getJob(id)).toMatchObject({ kind: "send_receipt", payload, status: "ready" });
    expect(await t.sql(`SELECT id, note FROM ${t.schema}.orders`)).toEqual([{ id: 1042, note: payload.note }]);
  });

  it("rollback drops the job and the application's row", async () => {
    await t.sql(`CREATE TABLE ${t.schema}.orders (id int PRIMARY KEY)`);
    let id = "";
    await inTransaction(async (db) => {
      await db.query(`INSERT INTO ${t.schema}.orders (id) VALUES (1043)`);
      id = (await t.errand.enqueue("send_receipt", { orderId: 1043 }, { db })).id;
      expect(await db.query(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual({ rows: [{ n: 1 }] });
    }, false);
    expect(id).toMatch(/^\d+$/);
    expect(await t.errand.getJob(id)).toBeNull();
    expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.orders`)).toEqual([{ n: 0 }]);
  });

  it("enqueueMany reports a dedupe key that already exists as a duplicate", async () => {
    let first = "";
    await inTransaction(async (db) => {
      first = (await t.errand.enqueue("send_receipt", { orderId: 1 }, { db, dedupeKey: "receipt:'1'" })).id;
    }, true);
    let results: { id: string; duplicate: boolean }[] = [];
    await inTransaction(async (db) => {
      results = await t.errand.enqueueMany(
        [
          { kind: "send_receipt", payload: { orderId: 1 }, dedupeKey: "receipt:'1'" },
          { kind: "send_receipt", payload: { orderId: 2 }, dedupeKey: "receipt:'2'" },
        ],
        { db },
      );
    }, true);
    expect(results).toEqual([
      { id: first, duplicate: true },
      { id: expect.stringMatching(/^\d+$/), duplicate: false },
    ]);
    expect(results[1]!.id).not.toBe(first);
    expect(await t.sql(`SELECT dedupe_key FROM ${t.schema}.all_jobs ORDER BY id`)).toEqual([{ dedupe_key: "receipt:'1'" }, { dedupe_key: "receipt:'2'" }]);
  });

  it("passes parameters through intact: JSON, quotes, arrays, and '$n' inside literals left alone", async () => {
    let row: unknown;
    await inTransaction(async (db) => {
      const { rows } = await db.query(`SELECT $1::jsonb AS j, $2::text AS s, $3::text[] AS a, '$2' AS lit /* $1 */, $2::text = $4::text AS same`, [
        JSON.stringify(payload),
        payload.note,
        ["x", "y'z", 'q"'],
        payload.note,
      ]);
      row = rows[0];
    }, true);
    expect(row).toEqual({ j: payload, s: payload.note, a: ["x", "y'z", 'q"'], lit: "$2", same: true });
  });
}

describe("fromPostgresJs", () => {
  let sql: postgres.Sql;
  beforeAll(() => {
    sql = postgres(url, { max: 2, onnotice: () => {} });
  });
  afterAll(() => sql.end());

  adapterTests((fn, commit) =>
    rollingBack(
      sql.begin(async (tx) => {
        await fn(fromPostgresJs(tx));
        if (!commit) throw rollback;
      }),
    ),
  );

  it("also accepts the postgres() instance itself (each enqueue commits on its own)", async () => {
    const { id } = await t.errand.enqueue("k", { n: 1 }, { db: fromPostgresJs(sql) });
    expect(await t.errand.getJob(id)).toMatchObject({ kind: "k", payload: { n: 1 } });
  });

  it("prepares errand's statements once per connection, unless the instance prepares nothing (PgBouncer)", async () => {
    const preparedAfterThree = async (prepare: boolean) => {
      const one = postgres(url, { max: 1, prepare, onnotice: () => {} });
      try {
        return await one.begin(async (tx) => {
          for (let n = 0; n < 3; n++) await t.errand.enqueue("k", { n }, { db: fromPostgresJs(tx) });
          const rows = await tx.unsafe("SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE $1", [`%${t.schema}%`]);
          return rows[0]!.n as number;
        });
      } finally {
        await one.end();
      }
    };
    expect(await preparedAfterThree(true)).toBe(1);
    expect(await preparedAfterThree(false)).toBe(0);
    expect(await t.sql(`SELECT count(*)::int AS n FROM ${t.schema}.all_jobs`)).toEqual([{ n: 6 }]);
  });
});

describe("fromKysely", () => {
  let pool: pg.Pool;
  let db: Kysely<Record<string, never>>;
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: url, max: 2 });
    db = new Kysely({ dialect: new PostgresDialect({ pool }) });
  });
  afterAll(() => db.destroy());

  adapterTests((fn, commit) =>
    rollingBack(
      db.transaction().execute(async (trx) => {
        await fn(fromKysely(trx));
        if (!commit) throw rollback;
      }),
    ),
  );

  it("reads rows as PostgreSQL names them, even on an instance with CamelCasePlugin", async () => {
    const camel = db.withPlugin(new CamelCasePlugin());
    expect(await fromKysely(camel).query("SELECT $1::text AS dedupe_key", ["k"])).toEqual({ rows: [{ dedupe_key: "k" }] });
  });
});

describe("fromDrizzle (node-postgres driver)", () => {
  let pool: pg.Pool;
  let db: ReturnType<typeof drizzleNodePg<Record<string, never>, pg.Pool>>;
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: url, max: 2 });
    db = drizzleNodePg({ client: pool });
  });
  afterAll(() => pool.end());

  adapterTests((fn, commit) =>
    rollingBack(
      db.transaction(async (tx) => {
        await fn(fromDrizzle(tx, drizzleSql));
        if (!commit) throw rollback;
      }),
    ),
  );

  it("rolls back with tx.rollback()", async () => {
    let id = "";
    await expect(
      db.transaction(async (tx) => {
        id = (await t.errand.enqueue("k", { n: 1 }, { db: fromDrizzle(tx, drizzleSql) })).id;
        tx.rollback();
      }),
    ).rejects.toThrow(/rollback/i);
    expect(id).toMatch(/^\d+$/);
    expect(await t.errand.getJob(id)).toBeNull();
  });
});

describe("fromDrizzle (postgres-js driver)", () => {
  let client: postgres.Sql;
  let db: ReturnType<typeof drizzlePostgresJs<Record<string, never>, postgres.Sql>>;
  beforeAll(() => {
    client = postgres(url, { max: 2, onnotice: () => {} });
    db = drizzlePostgresJs({ client });
  });
  afterAll(() => client.end());

  adapterTests((fn, commit) =>
    rollingBack(
      db.transaction(async (tx) => {
        await fn(fromDrizzle(tx, drizzleSql));
        if (!commit) throw rollback;
      }),
    ),
  );
});
