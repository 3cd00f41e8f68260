/**
 * One forward-only migration, shipped as code so that bundlers carry it (a file read from
 * beside the module would be left behind). `{{schema}}` in `sql` becomes the quoted schema
 * name and `{{channel}}` the NOTIFY channel when it is applied.
 */
export interface Migration {
  /** Its place in the sequence: 1, 2, 3, … with no gaps (the file is `NNN-name.ts`). */
  readonly version: number;
  /** The file name after the number, recorded in `<schema>.migrations`. */
  readonly name: string;
  /** The statements, run in one transaction with the others pending. */
  readonly sql: string;
}
