import type { Queryable } from "./types.js";

/** A compiled raw statement, the shape Kysely's `CompiledQuery.raw(text, params)` produces. */
export interface KyselyRawQuery {
  readonly sql: string;
  readonly parameters: readonly unknown[];
  readonly query: { readonly kind: "RawNode"; readonly sqlFragments: readonly string[]; readonly parameters: readonly [] };
  readonly queryId: { readonly queryId: string };
}

/**
 * The two methods errand calls on Kysely: `withoutPlugins()` and `executeQuery(compiled)`.
 * A `Kysely` instance, a transaction (`trx` inside `db.transaction().execute(…)`) and a
 * controlled transaction (`db.startTransaction().execute()`) all fit.
 */
export interface KyselyExecutor {
  withoutPlugins(): KyselyExecutor;
  executeQuery(query: KyselyRawQuery): Promise<{ readonly rows: unknown[] }>;
}

let queries = 0;

/**
 * Lets errand enqueue through Kysely: pass the transaction and the job commits or rolls
 * back with it. Statements run without the instance's plugins, so a result transform
 * such as `CamelCasePlugin` does not rename the columns errand reads.
 *
 * @example
 * ```ts
 * import { Kysely, PostgresDialect } from "kysely";
 * import pg from "pg";
 * import { fromKysely } from "errand";
 *
 * const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool() }) });
 * await db.transaction().execute(async (trx) => {
 *   await trx.insertInto("orders").values({ id: 1042, total: 59000 }).execute();
 *   await errand.enqueue("send_receipt", { orderId: 1042 }, { db: fromKysely(trx) });
 * }); // throw inside instead, and neither the order nor the job exists
 * ```
 */
export function fromKysely(db: KyselyExecutor): Queryable {
  const plain = db.withoutPlugins();
  return {
    async query<Row>(text: string, params: readonly unknown[] = []) {
      const compiled: KyselyRawQuery = {
        sql: text,
        parameters: params,
        query: { kind: "RawNode", sqlFragments: [text], parameters: [] },
        queryId: { queryId: `errand-${++queries}` },
      };
      const { rows } = await plain.executeQuery(compiled);
      return { rows: rows as Row[] };
    },
  };
}
