import type { Queryable } from "./types.js";

/**
 * The parts of Drizzle's `sql` helper (from `drizzle-orm`) errand uses to build a
 * parameterised statement: `sql.raw`, `sql.param` and `sql.join`.
 */
export interface DrizzleSqlHelper<Query> {
  raw(text: string): unknown;
  param(value: unknown): unknown;
  join(chunks: unknown[]): Query;
}

/**
 * The one method errand calls on a Drizzle database or transaction: `execute(query)`.
 * It resolves to `{ rows }` with the node-postgres and PGlite drivers, to the rows
 * themselves with the postgres.js driver.
 */
export interface DrizzleDatabase<Query> {
  execute(query: Query): PromiseLike<{ readonly rows: unknown[] } | readonly unknown[]>;
}

/**
 * Lets errand enqueue through Drizzle: pass the transaction (and Drizzle's `sql` helper,
 * so errand need not import drizzle-orm) and the job commits or rolls back with it.
 * Works with the `drizzle-orm/node-postgres`, `drizzle-orm/pglite` and
 * `drizzle-orm/postgres-js` drivers.
 *
 * @example
 * ```ts
 * import { sql } from "drizzle-orm";
 * import { drizzle } from "drizzle-orm/node-postgres";
 * import { fromDrizzle } from "errand";
 *
 * const db = drizzle(process.env.DATABASE_URL!);
 * await db.transaction(async (tx) => {
 *   await tx.insert(orders).values({ id: 1042, total: 59000 });
 *   await errand.enqueue("send_receipt", { orderId: 1042 }, { db: fromDrizzle(tx, sql) });
 * }); // throw (or tx.rollback()) inside instead, and neither the order nor the job exists
 * ```
 */
export function fromDrizzle<Query>(db: DrizzleDatabase<Query>, sql: DrizzleSqlHelper<Query>): Queryable {
  return {
    async query<Row>(text: string, params: readonly unknown[] = []) {
      const chunks = splitPlaceholders(text).map((part) => (typeof part === "string" ? sql.raw(part) : sql.param(params[part])));
      const result = await db.execute(sql.join(chunks));
      return { rows: (isRows(result) ? [...result] : result.rows) as Row[] };
    },
  };
}

function isRows(result: { readonly rows: unknown[] } | readonly unknown[]): result is readonly unknown[] {
  return Array.isArray(result);
}

// Literals, quoted identifiers and comments are copied as they are; only a `$n` outside
// them is a parameter. Drizzle numbers its own parameters, so each `$n` becomes one.
const token = /'(?:[^']|'')*'|"(?:[^"]|"")*"|(\$[A-Za-z_]\w*\$|\$\$)[\s\S]*?\1|--[^\n]*|\/\*[\s\S]*?\*\/|\$(\d+)/g;

/**
 * Splits a statement at its `$1…` placeholders: text stays text, each placeholder
 * becomes the zero-based index of its parameter.
 *
 * @example
 * ```ts
 * splitPlaceholders("SELECT $1::int, '$2' || $1"); // ["SELECT ", 0, "::int, '$2' || ", 0, ""]
 * ```
 */
function splitPlaceholders(text: string): (string | number)[] {
  const parts: (string | number)[] = [];
  let start = 0;
  for (const match of text.matchAll(token)) {
    if (match[2] === undefined) continue;
    parts.push(text.slice(start, match.index), Number(match[2]) - 1);
    start = match.index + match[0].length;
  }
  parts.push(text.slice(start));
  return parts;
}
