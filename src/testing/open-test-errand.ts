import { randomBytes } from "node:crypto";
import pg from "pg";
import { PGlite } from "@electric-sql/pglite";
import { Errand, type ErrandOptions } from "../client.js";
import type { JobMap, UntypedJobs } from "../jobs.js";
import { ValidationError } from "../errors.js";
import { pgDriver } from "../driver/pg.js";
import { pgliteDriver } from "../driver/pglite.js";
import type { Driver } from "../driver/types.js";
import { migrate } from "../migrations/migrate.js";
import { defaultSchema } from "../defaults.js";
import { checkKeys } from "../validate.js";
import { testingQueriesFor } from "../sql/testing.js";

/** Options for {@link openTestErrand}. */
export interface TestErrandOptions<Jobs = UntypedJobs> {
  /** The job kinds from `defineJobs`, exactly as in `Errand.open`: the errand is typed by them. */
  readonly jobs?: ErrandOptions<Jobs>["jobs"];
  /** Per-kind defaults (attempts, backoff, lease, priority), exactly as in `Errand.open`. */
  readonly kinds?: ErrandOptions["kinds"];
  /** Largest payload accepted, in bytes of JSON. Default 256 KiB. */
  readonly maxPayloadBytes?: number;
  /**
   * A real database to test on instead of a fresh in-memory PGlite: a `pg.Pool` or a
   * PGlite instance (yours to close). errand then works in a new schema with a random
   * name, so test files can share one database and run in parallel; closing the errand
   * drops that schema.
   */
  readonly db?: pg.Pool | PGlite;
}

/**
 * Opens an {@link Errand} for a test: by default on a fresh in-memory PGlite database
 * (no server, nothing on disk), migrated and ready. `errand.close()` closes that
 * database too. With `db`, it uses a throwaway schema there instead and drops it on close.
 * Typed like `Errand.open`: by `jobs`, or by the type argument (`openTestErrand<Jobs>()`).
 *
 * @example
 * ```ts
 * import { openTestErrand } from "errand/testing";
 *
 * const errand = await openTestErrand({ kinds: { send_receipt: { maxAttempts: 3 } } });
 * await errand.enqueue("send_receipt", { orderId: 1042 });
 * await errand.close(); // the in-memory database goes with it
 * ```
 */
export async function openTestErrand<Jobs extends JobMap<Jobs> = UntypedJobs>(options: TestErrandOptions<Jobs> = {}): Promise<Errand<Jobs>> {
  checkKeys(options, "", ["jobs", "kinds", "maxPayloadBytes", "db"]);
  const { db, jobs, kinds, maxPayloadBytes } = options;
  let driver: Driver;
  let schema: string | undefined;
  if (db === undefined) {
    driver = pgliteDriver(await PGlite.create({ loadDataDir: await migratedTemplate() }), true);
  } else {
    schema = `errand_test_${randomBytes(6).toString("hex")}`;
    driver = dropSchemaOnClose(sharedDriver(db), schema);
  }
  let errand: Errand<Jobs> | undefined;
  try {
    errand = Errand.fromDriver<Jobs>(driver, { schema, jobs, kinds, maxPayloadBytes }); // validates jobs, kinds and maxPayloadBytes
    await errand.migrate();
  } catch (error) {
    await (errand ?? driver).close();
    throw error;
  }
  return errand;
}

/**
 * Creating a PGlite database takes seconds; loading a copy of one takes about one. The
 * first call builds a migrated database and keeps its image in memory for the process.
 */
let template: Promise<Blob> | undefined;

function migratedTemplate(): Promise<Blob> {
  template ??= (async () => {
    const db = await PGlite.create();
    try {
      await migrate(pgliteDriver(db), defaultSchema);
      return await db.dumpDataDir("none");
    } finally {
      await db.close();
    }
  })().catch((error: unknown) => {
    template = undefined; // let the next call try again
    throw error;
  });
  return template;
}

function sharedDriver(db: unknown): Driver {
  if (db instanceof pg.Pool) return pgDriver(db, false);
  if (db instanceof PGlite) return pgliteDriver(db, false);
  throw new ValidationError("db", "must be a pg.Pool or a PGlite instance");
}

/** The caller's database stays open; only the test's schema goes. */
function dropSchemaOnClose(driver: Driver, schema: string): Driver {
  return {
    ...driver,
    async close() {
      try {
        await driver.run(testingQueriesFor(schema).dropSchema, []);
      } finally {
        await driver.close();
      }
    },
  };
}
