import type { PGlite, Transaction as PGliteTransaction } from "@electric-sql/pglite";
import type { Driver, QueryResult, Queryable, Statement, Transaction } from "./types.js";

/**
 * A driver over one PGlite instance. PGlite has a single connection, so statements are
 * serialised; inside a transaction only the transaction's own handle may be used.
 *
 * @param onClose - extra cleanup after the database closes (e.g. releasing a lock file).
 */
export function pgliteDriver(db: PGlite, ownsDb = false, onClose?: () => void): Driver {
  const transaction = <T>(fn: (tx: Transaction) => Promise<T>): Promise<T> =>
    db.transaction((tx) => fn({ ...wrapTransaction(tx), exec: async (sql) => void (await tx.exec(sql)) }));
  const run = async <Row>(statement: Statement, params: readonly unknown[]): Promise<QueryResult<Row>> => {
    const result = await db.query<Row>(statement.text, params as unknown[]);
    return { rows: result.rows };
  };
  return {
    run,
    transaction,
    // PGlite is one connection: the session is the database itself, whose statements other
    // callers may interleave between the session's (never inside its transactions).
    session: (fn) => fn({ ...wrapTransaction(db), run, transaction }),
    async listen(channel, onNotify) {
      const unlisten = await db.listen(channel, (payload) => onNotify(payload));
      return async () => {
        if (!db.closed) await unlisten();
      };
    },
    async close() {
      if (ownsDb && !db.closed) await db.close();
      onClose?.();
    },
  };
}

/** Adapts a PGlite transaction to {@link Queryable}. */
function wrapTransaction(tx: PGliteTransaction | PGlite): Queryable {
  return {
    async query<Row>(text: string, params?: readonly unknown[]) {
      const result = await tx.query<Row>(text, params as unknown[] | undefined);
      return { rows: result.rows };
    },
  };
}
