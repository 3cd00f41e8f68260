import pg from "pg";
import type { Driver, QueryResult, Queryable, Session, Statement, Transaction } from "./types.js";

/** Options for {@link pgDriver}. */
export interface PgDriverOptions {
  /** Called when an idle connection fails (the server restarted, the network dropped). */
  readonly onError?: (error: Error) => void;
  /** How long a pooled connection keeps its statements' plans (see {@link planLifetimeMs}); for tests. */
  readonly planLifetimeMs?: number;
}

/**
 * How long a pooled connection keeps its prepared statements' plans. PostgreSQL makes a
 * statement's generic plan once, for the table as it is then, and keeps it until something
 * invalidates it (autovacuum's ANALYZE does, where autovacuum runs): one made while the jobs
 * table had a few pages reads the whole table for rows it could fetch by id, and a worker
 * warmed on an empty queue then ran a backlog of 100,000 jobs at a twelfth of its speed
 * (bench/README.md, round of 2026-12-06, early morning). A connection taken from the pool
 * this long after its plans were made, or after {@link Driver.refreshPlans} (which the
 * worker calls when a backlog follows an empty queue, at most every
 * {@link minPlanRefreshMs}), discards them first (DISCARD PLANS keeps the statements):
 * they are made again for the tables as they are now, a few milliseconds of planning per
 * connection each time.
 */
export const planLifetimeMs = 60_000;
/**
 * A connection's first plans live {@link planLifetimeMs} divided by this, and each
 * generation after twice as long as the one before, up to {@link planLifetimeMs}: the
 * plans of a new connection are made while the tables may still be growing from empty (a
 * new installation, or a quiet one whose jobs have moved out), and a keyed enqueue planned
 * then read the whole table twice per call, 0.9 ms a call at the start and 1.8 ms at 6,000
 * rows. Remade at about 1, 3, 7, 15, 30 and 60 s, they follow the table as it grows.
 */
export const youngPlanDivisor = 64;
/**
 * What every connection errand opens is set to: no JIT compilation. errand's statements
 * are index lookups that never reach its threshold, or counts over the open jobs (stats,
 * the dashboard) that do once the backlog is big, and JIT only slowed those. `stats()` with
 * 20 kinds in 5 queues, 10 calls each: 2,000,000 ready jobs, 0.46–0.59 s with JIT, 0.44–0.49 s
 * without; 8,000,000, where the plan's cost passes PostgreSQL's default threshold for
 * inlining and optimisation (1.6–1.8 s of compiling), 2.2–2.8 s with, 1.7–2.1 s without.
 * A SET after connecting, not the startup packet's `options`, which PgBouncer refuses for
 * settings it does not track.
 */
export const sessionSettings = "SET jit = off";

/**
 * A pool whose connections take {@link sessionSettings} before their first statement: the
 * pool errand creates from a connection string. (Sent from the pool's `connect` event, the
 * SET would wait in pg's queue with that statement behind it, which pg deprecates.) A pool
 * of the application's keeps its own settings; errand's listening connection takes them
 * either way.
 */
export function ownPool(config: pg.PoolConfig): pg.Pool {
  return new pg.Pool({ ...config, Client: SettledClient });
}

class SettledClient extends pg.Client {
  override connect(): Promise<pg.Client>;
  override connect(callback: (err: Error | null) => void): void;
  override connect(callback?: (err: Error | null) => void): Promise<pg.Client> | void {
    const settled = super.connect().then(async () => {
      // A setting for speed: a server that refuses it still gets its statements.
      await this.query(sessionSettings).catch(() => {});
      return this;
    });
    if (!callback) return settled;
    settled.then(() => callback(null), callback);
  }
}

/** The least time between two {@link Driver.refreshPlans} that take effect. */
export const minPlanRefreshMs = 5_000;

/**
 * A driver over a `pg` Pool. errand's hot statements are sent as named (prepared)
 * statements. LISTEN uses one extra dedicated connection built from the pool's settings,
 * reconnecting with backoff if it drops. While the pool holds no connection at all (its
 * idle ones closed after `idleTimeoutMillis`, 10 s by default), a statement runs on a
 * listening connection behind at most {@link workQueue} - 1 other, and a background one (see
 * {@link Statement.background}) behind up to {@link listenerQueue} - 1: an idle worker then
 * holds that one connection only, its timers' statements that fall together do not open
 * another, the first claim after a quiet spell does not wait for a new one, and neither do
 * the one job it brings (its completion may overlap the claim that looks for more). More
 * statements at once than that (work arrived) open the pool, which then serves every
 * statement until it is idle again. A listening connection's plans are made again on
 * {@link Driver.refreshPlans}, as a pooled one's are.
 *
 * @param ownsPool - close the pool in {@link Driver.close} (true when errand created it).
 */
export function pgDriver(pool: pg.Pool, ownsPool = false, options: PgDriverOptions = {}): Driver {
  const onError = options.onError ?? (() => {});
  // Without a listener, an idle client's error would crash the process.
  pool.on("error", onError);
  const planLifetime = options.planLifetimeMs ?? planLifetimeMs;
  /** When each connection's plans were made, and how long they live (see youngPlanDivisor). */
  const planned = new WeakMap<pg.ClientBase, { at: number; lifetime: number }>();
  /** When plans made before it were last declared stale (refreshPlans). */
  let staleBefore = -Infinity;
  /** `aging`: plans also go stale with age (a pooled connection's; see listen for the listening one's). */
  const discardStalePlans = (client: pg.ClientBase, aging = true): void => {
    const now = performance.now();
    const plans = planned.get(client);
    if (plans !== undefined && (!aging || now - plans.at < plans.lifetime) && plans.at >= staleBefore) return;
    planned.set(client, { at: now, lifetime: plans === undefined ? planLifetime / youngPlanDivisor : Math.min(planLifetime, plans.lifetime * 2) });
    // Emitted before the connection is handed out: this goes ahead of the statement it was taken for.
    if (plans !== undefined) client.query("DISCARD PLANS").catch(() => {});
  };
  const onAcquire = (client: pg.PoolClient): void => discardStalePlans(client);
  pool.on("acquire", onAcquire);
  const listeners = new Set<Listening>();

  return {
    async run<Row>(statement: Statement, params: readonly unknown[]): Promise<QueryResult<Row>> {
      const query = named(statement, params);
      const spare = pool.totalCount === 0 ? spareListener(listeners, statement.background ? listenerQueue : workQueue) : undefined;
      const result = spare ? await spare.query(query) : await pool.query(query);
      return { rows: result.rows as Row[] };
    },
    async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
      return checkedOut(pool, (client, broken) => inTransaction(client, fn, broken));
    },
    async session<T>(fn: (session: Session) => Promise<T>): Promise<T> {
      return checkedOut(pool, async (client, broken) => {
        try {
          const run = async <Row>(statement: Statement, params: readonly unknown[]): Promise<QueryResult<Row>> => ({ rows: (await client.query(named(statement, params))).rows as Row[] });
          return await fn({ ...wrapClient(client), run, transaction: (inner) => inTransaction(client, inner, broken) });
        } catch (error) {
          broken();
          throw error;
        }
      });
    },
    refreshPlans() {
      const now = performance.now();
      if (now - staleBefore >= minPlanRefreshMs) staleBefore = now;
    },
    async listen(channel, onNotify, onReconnect) {
      // A listening connection's plans are made again on refreshPlans only, not with age: an
      // idle worker's timers would plan again every minute, which took 50 idle workers from
      // 1.2–1.3 % to 2.1–2.3 % of a core (bench/README.md, round of 2026-12-07, late morning).
      const listening = await listenWithReconnect(pool.options, channel, onNotify, onReconnect ?? (() => {}), onError, (client) => discardStalePlans(client, false));
      listeners.add(listening);
      return async () => {
        listeners.delete(listening);
        await listening.stop();
      };
    },
    async close() {
      await Promise.all([...listeners].map((listening) => listening.stop()));
      listeners.clear();
      pool.off("error", onError);
      pool.off("acquire", onAcquire);
      if (ownsPool) await pool.end();
    },
  };
}

/**
 * Runs `fn` on a connection checked out of `pool`, then gives it back, or closes it if `fn`
 * called `broken` or the connection failed meanwhile. While checked out, a connection has
 * no listener of the pool's: one that is killed between statements would emit an `error`
 * that nobody hears, and that crashes the process. Its statements fail on their own.
 */
async function checkedOut<T>(pool: pg.Pool, fn: (client: pg.PoolClient, broken: () => void) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let failed = false;
  const onError = () => (failed = true);
  client.on("error", onError);
  try {
    return await fn(client, onError);
  } finally {
    client.off("error", onError);
    client.release(failed);
  }
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

/**
 * Runs `statement` on a connection the caller passed in (enqueue's `db`, a handler's
 * transaction): by name on a `pg` Pool, Client or PoolClient, so that each connection
 * parses and plans it once (enqueue's statement takes longer to plan than to run); as
 * text on any other {@link Queryable}.
 */
export async function runOn<Row>(db: Queryable, statement: Statement, params: readonly unknown[]): Promise<QueryResult<Row>> {
  if (db instanceof pg.Pool) return { rows: (await db.query(named(statement, params))).rows as Row[] };
  if (db instanceof pg.Client) return { rows: (await db.query(named(statement, params))).rows as Row[] };
  return db.query<Row>(statement.text, params);
}

/** `statement` as a `pg` query config: sent by name, prepared once per connection. */
function named(statement: Statement, params: readonly unknown[]): pg.QueryConfig {
  return { name: statement.name, text: statement.text, values: params as unknown[] };
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

/**
 * Most background statements queued on a listening connection at once (while the pool is
 * empty): a notification that arrives behind them waits for these few short ones only.
 */
const listenerQueue = 4;

/**
 * Most statements that are not background on a listening connection at once (while the
 * pool is empty): a job's completion and the claim after it, which overlap when the claim
 * takes longer than the completer's flush delay.
 */
const workQueue = 2;

/** A listening connection (while connected) that also runs statements while it has few in flight. */
interface Listening {
  /** The connection now, if connected and with fewer than `queue` statements in flight; undefined otherwise. */
  spare(queue: number): { query(query: pg.QueryConfig): Promise<pg.QueryResult> } | undefined;
  /** Stops listening and closes the connection once the statements already on it have ended. */
  stop(): Promise<void>;
}

function spareListener(listeners: ReadonlySet<Listening>, queue: number): ReturnType<Listening["spare"]> {
  for (const listening of listeners) {
    const spare = listening.spare(queue);
    if (spare) return spare;
  }
  return undefined;
}

async function listenWithReconnect(
  config: pg.ClientConfig,
  channel: string,
  onNotify: (payload?: string) => void,
  onReconnect: () => void,
  onError: (error: Error) => void,
  beforeStatement: (client: pg.Client) => void,
): Promise<Listening> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;
  /** Statements in flight on `client` (see listenerQueue), run one after another: pg deprecates its own queue. */
  let inFlight = 0;
  let last: Promise<unknown> = Promise.resolve();

  const connect = async (): Promise<void> => {
    // Keepalive notices a connection that died without a word (a dropped network path).
    const next = new pg.Client({ ...config, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
    next.on("notification", (message) => {
      if (message.channel === channel && !stopped) onNotify(message.payload);
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
      // Each statement is planned here generically, once until refreshPlans (see listen),
      // not five times before PostgreSQL
      // weighs a generic plan (nor every time, where the generic one costs more on paper:
      // the rescuer's, whose sweep a parameter switches off). This connection serves an
      // idle worker's timers, every 15 or 30 s, where that planning was most of the
      // server's work at rest (bench/README.md, round of 2026-12-06, evening). Every
      // statement's generic plan is held to its indexes by test/worker/query-plans.pg.test.ts.
      await next.query(`SET plan_cache_mode = force_generic_plan; ${sessionSettings}`);
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
  return {
    spare(queue) {
      const current = client;
      if (!current || inFlight >= queue) return undefined;
      return {
        async query(query) {
          inFlight++;
          const run = last.then(() => {
            beforeStatement(current);
            return current.query(query);
          });
          last = run.catch(() => {});
          try {
            return await run;
          } finally {
            inFlight--;
          }
        },
      };
    },
    async stop() {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      const current = client;
      client = undefined;
      // The statements already on it (an idle worker's timers') end first, not with "Connection terminated".
      await last;
      await current?.end().catch(() => {});
    },
  };
}

/** Quotes an identifier for SQL text. */
function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
