/**
 * What crosses between {@link isolated} (isolated.ts) and the thread or child process that
 * runs the handler (isolated-entry.js). Everything here survives a structured clone, the
 * format of both `postMessage` and `fork`'s "advanced" serialisation.
 */

/** The part of a JobContext that can cross: everything but the signal (the parent terminates instead). */
export interface IsolatedContext {
  readonly id: string;
  readonly kind: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly idempotencyKey: string;
  readonly createdAt: Date;
}

/** One job for the isolate: which module and export to run, with what. */
export interface IsolatedRequest {
  /** The handler module's file URL. */
  readonly module: string;
  /** The name of the export that holds the handler. */
  readonly export: string;
  readonly payload: unknown;
  readonly context: IsolatedContext;
}

/**
 * A thrown value as it crosses: an Error by its parts (its class cannot be cloned), any
 * other value as itself when it can be cloned, else as its `String()`.
 */
export type ThrownValue =
  | {
      readonly kind: "error";
      readonly name: string;
      readonly message: string;
      readonly stack: string | undefined;
      /** An ErrandError's code; `"permanent_failure"` marks a PermanentError. */
      readonly code: string | undefined;
      readonly cause: ThrownValue | undefined;
    }
  | { readonly kind: "value"; readonly value: unknown };

/**
 * How the handler ended. A result that cannot be cloned comes back as undefined: only a
 * snooze changes what errand does with a job, and that crosses as its own reply.
 */
export type IsolatedReply =
  | { readonly type: "result"; readonly value: unknown }
  | { readonly type: "snooze"; readonly delayMs: number }
  | {
      readonly type: "thrown";
      readonly error: ThrownValue;
      /** Thrown outside the handler's promise (a timer, an unhandled rejection): the isolate's state is unknown, so it is not reused. */
      readonly uncaught?: boolean;
    };
