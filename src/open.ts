/**
 * What `Errand.open` does before there is an Errand: {@link ErrandOptions} checked (the
 * error names the field) into the settings every Errand has, which `Errand.fromDriver`
 * shares; the driver the options name (a URL, an existing pool or PGlite, or the
 * embedded database); and the migrations.
 */
import pg from "pg";
import type { PGlite } from "@electric-sql/pglite";
import { defaultDataDir, defaultMaxPayloadBytes, defaultPoolSize, defaultSchema } from "./defaults.js";
import { ErrandError, ValidationError } from "./errors.js";
import { ownPool, pgDriver } from "./driver/pg.js";
import type { Driver } from "./driver/types.js";
import type { JobsDefinition, StandardSchemaV1, UntypedJobs } from "./jobs.js";
import { migrate } from "./migrations/migrate.js";
import { type KindOptions, type ResolvedKind, resolveKinds } from "./options.js";
import { checkSchemaName } from "./sql/statement.js";
import { checkKeys, integerIn } from "./validate.js";

/**
 * How to reach the database (with none of these, errand opens the embedded PGlite
 * database), and the jobs: `jobs` from {@link defineJobs} types the errand by them.
 */
export interface ErrandOptions<Jobs = UntypedJobs> {
  /** A PostgreSQL URL (`postgres://…`). errand creates and closes its own pool. */
  readonly connectionString?: string;
  /** An existing `pg.Pool` or PGlite instance (yours to close). */
  readonly db?: pg.Pool | PGlite;
  /** The embedded database's folder. Default `.errand/data`. */
  readonly dataDir?: string;
  /** Schema holding errand's tables. Default `errand`. */
  readonly schema?: string;
  /**
   * The job kinds from {@link defineJobs}: their payload types (the errand is typed by
   * them), settings and schemas. Replaces `kinds`.
   */
  readonly jobs?: JobsDefinition<Jobs>;
  /** Per-kind defaults: attempts, backoff, lease, priority. For an untyped errand; `jobs` carries them for a typed one. */
  readonly kinds?: Readonly<Record<string, KindOptions>>;
  /** Largest payload accepted, in bytes of JSON. Default 256 KiB. */
  readonly maxPayloadBytes?: number;
  /** Apply pending migrations on open. Default true. */
  readonly migrate?: boolean;
  /** Pool size when errand creates the pool. Default 10. */
  readonly poolSize?: number;
  /**
   * Called when one of errand's PostgreSQL connections fails while idle (server restart,
   * network drop); errand reconnects on its own. Used with `connectionString` or a `pg.Pool`
   * as `db`; PGlite has no connection to lose. To watch a driver you built yourself, give
   * `pgDriver` its `onError` instead.
   */
  readonly onConnectionError?: (error: Error) => void;
}

/**
 * Checks the options, connects and, unless `migrate: false`, migrates (closing the driver
 * if that fails): the driver, schema and settings an Errand is made with.
 */
export async function openDatabase<Jobs>(options: ErrandOptions<Jobs>): Promise<{ readonly driver: Driver; readonly schema: string; readonly settings: ErrandSettings }> {
  checkKeys(options, "", ["connectionString", "db", "dataDir", "schema", "jobs", "kinds", "maxPayloadBytes", "migrate", "poolSize", "onConnectionError"]);
  const { schema, ...settings } = resolveSettings(options);
  const driver = await connect(options);
  if (options.migrate !== false) {
    try {
      await migrate(driver, schema);
    } catch (error) {
      await driver.close();
      throw error;
    }
  }
  return { driver, schema, settings };
}

/** What an Errand is made with besides its driver and schema. */
export interface ErrandSettings {
  readonly kinds: ReadonlyMap<string, ResolvedKind>;
  readonly maxPayloadBytes: number;
  readonly schemas: ReadonlyMap<string, StandardSchemaV1>;
}

/** The options every Errand has, whichever way it was made, validated (the error names the field). */
export function resolveSettings<Jobs>(options: Pick<ErrandOptions<Jobs>, "schema" | "jobs" | "kinds" | "maxPayloadBytes" | "poolSize">): ErrandSettings & { readonly schema: string } {
  const maxPayloadBytes = options.maxPayloadBytes ?? defaultMaxPayloadBytes;
  if (!Number.isInteger(maxPayloadBytes) || maxPayloadBytes <= 0) throw new ValidationError("maxPayloadBytes", "must be a positive integer");
  if (options.poolSize !== undefined) integerIn(options.poolSize, "poolSize", 1, 10_000);
  const schema = checkSchemaName(options.schema ?? defaultSchema);
  if (options.jobs === undefined) return { schema, kinds: resolveKinds(options.kinds), maxPayloadBytes, schemas: new Map() };
  if (options.kinds !== undefined) throw new ValidationError("kinds", "give jobs or kinds, not both: jobs carries each kind's settings");
  const { kinds, schemas } = options.jobs as Partial<JobsDefinition<Jobs>>;
  if (typeof kinds !== "object" || kinds === null || !(schemas instanceof Map)) throw new ValidationError("jobs", "must be what defineJobs() returns");
  return { schema, kinds: resolveKinds(kinds, "jobs"), maxPayloadBytes, schemas };
}

/**
 * The driver the options name: a pool of its own for `connectionString` (checked with one
 * query, so a wrong URL fails here), the given `db`, or else the embedded database.
 */
async function connect(options: Pick<ErrandOptions, "connectionString" | "db" | "dataDir" | "poolSize" | "onConnectionError">): Promise<Driver> {
  const given = [options.connectionString, options.db, options.dataDir].filter((x) => x !== undefined).length;
  if (given > 1) throw new ValidationError("connectionString", "give one of connectionString, db or dataDir");
  if (options.connectionString !== undefined) {
    if (!/^postgres(ql)?:\/\//.test(options.connectionString)) throw new ValidationError("connectionString", "must be a postgres:// URL");
    const pool = ownPool({ connectionString: options.connectionString, max: options.poolSize ?? defaultPoolSize });
    try {
      await pool.query("SELECT 1");
    } catch (error) {
      await pool.end();
      throw new ErrandError("connect_failed", `cannot connect to ${redact(options.connectionString)}: ${(error as Error).message}`, { cause: error });
    }
    return pgDriver(pool, true, { onError: options.onConnectionError });
  }
  if (options.db instanceof pg.Pool) return pgDriver(options.db, false, { onError: options.onConnectionError });
  // PGlite is loaded only where it is used: a PostgreSQL application's workers start without it.
  if (options.db !== undefined) {
    const [{ PGlite: pglite }, { pgliteDriver }] = await Promise.all([import("@electric-sql/pglite"), import("./driver/pglite.js")]);
    if (options.db instanceof pglite) return pgliteDriver(options.db, false);
    throw new ValidationError("db", "must be a pg.Pool or a PGlite instance");
  }
  const { openEmbedded } = await import("./driver/embedded.js");
  return openEmbedded(options.dataDir ?? defaultDataDir);
}

/** The URL with its password hidden, for error messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}
