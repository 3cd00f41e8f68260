import pg from "pg";
import type { Driver, QueryResult, Queryable, Session, Statement, Transaction } from "./types.js";

/** Options for {@link pgDriver}. */
export interface PgDriverOptions {
  /** Called when an idle connection fails (the server restarted, the network dropped). */
  readonly onError?: (error: Error) => void;
}

/**
 * A driver over a `pg` Pool. errand's hot statements are sent as named (prepared)
 * statements. LISTEN uses one extra dedicated connection built from the pool's settings,
 * reconnecting with backoff if it drops.
 *
 * @param ownsPool - close the pool in {@link Driver.close} (true when errand created it).
 */
export function pgDriver(pool: pg.Pool, ownsPool = false, options: PgDriverOptions = {}): Driver {
  const onError = options.onError ?? (() => {});
  // Without a listener, an idle client's error would crash the process.
  pool.on("error", onError);
  const listeners = new Set<() => Promise<void>>();

  return {
    async run<Row>(statement: Statement, params: readonly unknown[]): Promise<QueryResult<Row>> {
      const result = await pool.query({ name: statement.name, text: statement.text, values: params as unknown[] });
      return { rows: result.rows as Row[] };
    },
    async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      let broken = false;
      try {
        return await inTransaction(client, fn, () => (broken = true));
      } finally {
        client.release(broken);
      }
    },
    async session<T>(fn: (session: Session) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      let failed = false;
      try {
        return await fn({ ...wrapClient(client), transaction: (inner) => inTransaction(client, inner, () => (failed = true)) });
      } catch (error) {
        failed = true;
        throw error;
      } finally {
        client.release(failed);
      }
    },
    async listen(channel, onNotify, onReconnect) {
      const stop = await listenWithReconnect(pool.options, channel, onNotify, onReconnect ?? (() => {}), onError);
      listeners.add(stop);
      return async () => {
        listeners.delete(stop);
        await stop();
      };
    },
    async close() {
      await Promise.all([...listeners].map((stop) => stop()));
      listeners.clear();
      pool.off("error", onError);
      if (ownsPool) await pool.end();
    },
  };
}

/** Runs `fn` between BEGIN and COMMIT on `client`; `onBroken` when not even ROLLBACK went through. */
async function inTransaction<T>(client: pg.PoolClient, fn: (tx: Transaction) => Promise<T>, onBroken: () => void): Promise<T> {
  try {
    await client.query("BEGIN");
    const result = await fn({ ...wrapClient(client), exec: async (sql) => void (await client.query(sql)) });
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(onBroken);
    throw error;
  }
}

/** Adapts a `pg` client to {@link Queryable}. */
function wrapClient(client: pg.ClientBase | pg.Pool): Queryable {
  return {
    async query<Row>(text: string, params?: readonly unknown[]) {
      const result = await client.query(text, params as unknown[] | undefined);
      return { rows: result.rows as Row[] };
    },
  };
}

async function listenWithReconnect(
  config: pg.ClientConfig,
  channel: string,
  onNotify: (payload?: string) => void,
  onReconnect: () => void,
  onError: (error: Error) => void,
): Promise<() => Promise<void>> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;

  const connect = async (): Promise<void> => {
    // Keepalive notices a connection that died without a word (a dropped network path).
    const next = new pg.Client({ ...config, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
    next.on("notification", (message) => {
      if (message.channel === channel) onNotify(message.payload);
    });
    next.on("error", (error) => {
      onError(error);
      if (client === next) {
        client = undefined;
        next.end().catch(() => {});
        scheduleReconnect();
      }
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (error) {
      next.end().catch(() => {}); // connected but LISTEN failed: do not leak the connection
      throw error;
    }
    if (stopped) {
      await next.end();
      return;
    }
    client = next;
    failures = 0;
  };

  const scheduleReconnect = (): void => {
    if (stopped || retryTimer) return;
    const delay = Math.min(5_000, 100 * 2 ** failures++);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect().then(onReconnect, (error: Error) => {
        onError(error);
        scheduleReconnect();
      });
    }, delay);
    retryTimer.unref();
  };

  await connect();
  return async () => {
    stopped = true;
    if (retryTimer) clearTimeout(retryTimer);
    const current = client;
    client = undefined;
    await current?.end().catch(() => {});
  };
}

/** Quotes an identifier for SQL text. */
function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
