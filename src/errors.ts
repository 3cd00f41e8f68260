import { closest } from "./validate.js";

/**
 * Every error errand raises on purpose is an {@link ErrandError} with a stable `code`,
 * so callers can branch on `err.code` instead of parsing messages.
 */
export class ErrandError extends Error {
  /** A stable, machine-readable code such as `"invalid_argument"`. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ErrandError";
    this.code = code;
  }
}

/**
 * Bad input: the message names the field (`payload.user.createdAt`, `maxAttempts`, …).
 * Nothing was written when this is thrown.
 */
export class ValidationError extends ErrandError {
  /** The argument or field at fault, e.g. `"payload"` or `"delay"`. */
  readonly field: string;

  constructor(field: string, message: string) {
    super("invalid_argument", `${field}: ${message}`);
    this.name = "ValidationError";
    this.field = field;
  }
}

/**
 * Throw this from a handler (or wrap an error with {@link permanent}) when retrying
 * cannot help, e.g. a validation failure: the job goes to `dead` at once.
 *
 * @example
 * ```ts
 * if (!payload.email.includes("@")) throw new PermanentError("not an email address");
 * ```
 */
export class PermanentError extends ErrandError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("permanent_failure", message, options);
    this.name = "PermanentError";
  }
}

/** Marks `error` as permanent: the job that threw it is not retried. */
export function permanent(error: unknown): PermanentError {
  if (error instanceof PermanentError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const wrapped = new PermanentError(message, { cause: error });
  if (error instanceof Error && error.stack) wrapped.stack = error.stack;
  return wrapped;
}

/** A job names a kind that no handler is registered for. */
export class UnknownKindError extends ErrandError {
  constructor(kind: string, known: readonly string[]) {
    const hint = closest(kind, known);
    const list = known.length ? `known kinds: ${known.join(", ")}` : "no handlers are registered";
    super(
      "unknown_kind",
      `unknown kind '${kind}'${hint ? ` — did you mean '${hint}'?` : ""} (${list})`,
    );
    this.name = "UnknownKindError";
  }
}
