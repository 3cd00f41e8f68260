import type { Command } from "commander";
import { type DatabaseFlags, openFromFlags, withDatabase } from "./common.js";

export function register(program: Command): void {
  withDatabase(program.command("migrate").description("create or upgrade errand's schema (safe to run from many processes)")).action(
    async (flags: DatabaseFlags) => {
      const errand = await openFromFlags(flags, { migrate: false });
      try {
        const applied = await errand.migrate();
        console.log(applied.length ? `applied migrations ${applied.join(", ")} to schema ${errand.schema}` : `schema ${errand.schema} is up to date`);
      } finally {
        await errand.close();
      }
    },
  );
}
