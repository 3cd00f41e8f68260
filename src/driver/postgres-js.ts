import type { Queryable } from "./types.js";

/**
 * The two methods errand calls on a postgres.js `sql`: `unsafe(text, params, options)`, which
 * runs a statement with `$1…` parameters and resolves to its rows, and `typed(value, oid)`.
 * A `postgres()` instance and the `sql` inside `sql.begin(async (sql) => …)` both fit.
 */
export interface PostgresJsSql {
  unsafe(query: string, parameters?: unknown[], options?: { readonly prepare?: boolean }): PromiseLike<readonly unknown[]>;
  typed(value: unknown, oid: number): unknown;
}

/** PostgreSQL's `text` type. */
const textOid = 25;

/**
 * Lets errand enqueue through postgres.js: pass the transaction's `sql` and the job
 * commits or rolls back with it. Pass an instance without a column-name `transform`
 * (such as `postgres.camel`): errand reads its own result columns by their SQL names.
 * errand's statements are prepared once per connection, as postgres.js prepares its tagged
 * queries (an instance made with `prepare: false`, for PgBouncer, prepares none).
 *
 * @example
 * ```ts
 * import postgres from "postgres";
 * import { fromPostgresJs } from "errand";
 *
 * const sql = postgres(process.env.DATABASE_URL!);
 * await sql.begin(async (sql) => {
 *   await sql`INSERT INTO orders (id, total) VALUES (1042, 59000)`;
 *   await errand.enqueue("send_receipt", { orderId: 1042 }, { db: fromPostgresJs(sql) });
 * }); // throw inside instead, and neither the order nor the job exists
 * ```
 */
export function fromPostgresJs(sql: PostgresJsSql): Queryable {
  return {
    async query<Row>(text: string, params: readonly unknown[] = []) {
      // postgres.js serialises a string bound to a json/jsonb parameter as a JSON string
      // (`"{…}"`); errand, like pg, sends JSON as text. Typed as text, the string arrives
      // as written and the statement's own cast (`$1::jsonb`) parses it.
      const values = params.map((value) => (typeof value === "string" ? sql.typed(value, textOid) : value));
      // Prepared: unprepared, postgres.js asks the server for the parameters' types first,
      // one more round trip per statement, and the server plans it again each time.
      const rows = await sql.unsafe(text, values, { prepare: true });
      return { rows: [...rows] as Row[] };
    },
  };
}
