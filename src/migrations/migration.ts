/**
 * One forward-only migration, shipped as code so that bundlers carry it (a file read from
 * beside the module would be left behind). `{{schema}}` in its SQL becomes the quoted schema
 * name and `{{channel}}` the NOTIFY channel when it is applied.
 *
 * An installation upgrades while its workers run, so `sql` takes the jobs table's exclusive
 * lock only for catalog changes (adding a nullable column or one with a constant default,
 * a constraint NOT VALID). What has to read the whole table is declared beside it and done
 * afterwards without that lock: `indexes` built CONCURRENTLY, `validates` checked by
 * VALIDATE CONSTRAINT. Enqueues and claims go on meanwhile.
 */
export interface Migration {
  /** Its place in the sequence: 1, 2, 3, … with no gaps (the file is `NNN-name.ts`). */
  readonly version: number;
  /** The file name after the number, recorded in `<schema>.migrations`. */
  readonly name: string;
  /** The statements, run in one transaction that also records the migration as applied. */
  readonly sql: string;
  /**
   * Indexes built CONCURRENTLY once every pending migration's `sql` is applied, unless a
   * later migration retires them (an upgrade builds only the indexes of the latest schema).
   */
  readonly indexes?: readonly IndexBuild[];
  /** Indexes this migration replaces: dropped CONCURRENTLY once the indexes are built, so claims always have one. */
  readonly retires?: readonly string[];
  /** CHECK constraints `sql` adds NOT VALID, validated after it (a read of the table that blocks no write). */
  readonly validates?: readonly string[];
  /**
   * Rows the table already held that `sql`'s new columns must be brought in line for, in
   * short batches after the indexes are built and before the `retires` are dropped: a run
   * interrupted in between finds the retired indexes still there and goes over the rows again.
   */
  readonly backfill?: Backfill;
}

/** An UPDATE of a table's existing rows, written in batches of consecutive ids (see {@link Migration.backfill}). */
export interface Backfill {
  /** The table in the schema (its primary key is a bigint `id`): `jobs`. */
  readonly table: string;
  /** The UPDATE's SET list, on the row named `j`. */
  readonly set: string;
  /** The rows that need it, a condition on `j`: the others are not written again. */
  readonly where: string;
}

/** An index on a table of the schema, built without blocking writes to it. */
export interface IndexBuild {
  readonly name: string;
  /** The table in the schema: `jobs`. */
  readonly table: string;
  /** What follows the table in CREATE INDEX: `(queue, …) WHERE …`. */
  readonly columns: string;
}
