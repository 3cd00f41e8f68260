import { createHash } from "node:crypto";
import { ValidationError } from "../errors.js";
import type { Statement } from "../driver/types.js";

/** errand's default schema. */
export const defaultSchema = "errand";

/** Checks a schema name: a plain lower-case identifier, so it is safe in SQL text. */
export function checkSchemaName(schema: unknown): string {
  if (typeof schema !== "string" || !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new ValidationError("schema", `must be a lower-case SQL identifier (letters, digits, _), got ${JSON.stringify(schema)}`);
  }
  return schema;
}

/** The schema as it appears in SQL text. */
export function qualified(schema: string): string {
  return `"${checkSchemaName(schema)}"`;
}

/** The LISTEN/NOTIFY channel for a schema. */
export function channelFor(schema: string): string {
  return `errand_jobs_${schema}`;
}

/** A named statement; the name is a hash of the text, so it is stable per schema. */
export function statement(text: string): Statement {
  return { name: `errand_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`, text };
}

/** Builds a schema's statements once and hands back the same object after that. */
export function memoisePerSchema<T>(build: (schema: string) => T): (schema: string) => T {
  const cache = new Map<string, T>();
  return (schema) => {
    let built = cache.get(schema);
    if (built === undefined) {
      built = build(schema);
      cache.set(schema, built);
    }
    return built;
  };
}
