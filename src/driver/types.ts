/** Rows returned by a query. */
export interface QueryResult<Row> {
  readonly rows: Row[];
}

/**
 * The one thing errand needs from a connection: run a statement with `$1…` parameters
 * and get its rows. A `pg` Pool, Client or PoolClient, a PGlite instance or a PGlite
 * transaction fit as they are; {@link fromPostgresJs}, {@link fromKysely} and
 * {@link fromDrizzle} adapt the others. Passed as `db` to enqueue, it is how a job joins
 * the caller's transaction.
 */
export interface Queryable {
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
}

/** A connection inside a transaction; `exec` runs several statements (no parameters). */
export interface Transaction extends Queryable {
  exec(sql: string): Promise<void>;
}

/**
 * One connection held for a caller, outside any transaction: what it sets (an advisory
 * lock, a setting) lasts until the session ends, and it can run statements that refuse a
 * transaction block (CREATE INDEX CONCURRENTLY).
 */
export interface Session extends Queryable {
  /** Runs a (possibly prepared) statement on this session's connection. */
  run<Row = Record<string, unknown>>(statement: Statement, params: readonly unknown[]): Promise<QueryResult<Row>>;
  /** Runs `fn` in one transaction on this session's connection. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
}

/** A named statement: `name` lets drivers that support it prepare the text once. */
export interface Statement {
  readonly name: string;
  readonly text: string;
  /**
   * A worker's statement at rest (a poll, its presence, a rescue): a driver that runs
   * statements on its listening connection while its pool is empty may queue this one
   * there behind another rather than open a connection for it.
   */
  readonly background?: boolean;
}

/**
 * errand's seam to a database: statements, transactions and wake-ups.
 * Adapters: {@link pgDriver} and {@link pgliteDriver}.
 */
export interface Driver {
  /** Runs a (possibly prepared) statement outside any transaction. */
  run<Row = Record<string, unknown>>(statement: Statement, params: readonly unknown[]): Promise<QueryResult<Row>>;
  /** Runs `fn` in one transaction: commit when it resolves, roll back when it throws. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` on one connection of its own (see {@link Session}), returned to the pool
   * when `fn` settles; a session whose `fn` threw is closed, so nothing it set outlives it.
   */
  session<T>(fn: (session: Session) => Promise<T>): Promise<T>;
  /**
   * Calls `onNotify` for each notification on `channel`, with its payload (a driver that
   * cannot read payloads passes none, and listeners then treat the notification as being
   * about everything), and `onReconnect` after the listening connection was lost and
   * restored (notifications may have been missed). Resolves to a function that stops listening.
   */
  listen(channel: string, onNotify: (payload?: string) => void, onReconnect?: () => void): Promise<() => Promise<void>>;
  /**
   * The tables may have grown a lot since the prepared statements' plans were made (a
   * backlog came to a worker whose queue was empty): a driver that prepares statements
   * has each connection make its plans again before its next statement.
   */
  refreshPlans?(): void;
  /** Closes what the driver opened (not connections the caller passed in). */
  close(): Promise<void>;
}
