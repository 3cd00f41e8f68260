/**
 * What crosses between {@link isolated} (isolated.ts) and the thread or child process that
 * runs the handler (isolated-entry.js). Everything here survives a structured clone, the
 * format of both `postMessage` and `fork`'s "advanced" serialisation.
 */

/**
 * The part of a JobContext that can cross as data. The signal does not (the parent
 * terminates the isolate instead); progress and checkpoint cross as messages
 * ({@link IsolatedReport}); complete(tx) cannot cross at all (a transaction is a
 * connection of this process), so the isolate's ctx.complete rejects.
 */
export interface IsolatedContext {
  readonly id: string;
  readonly kind: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly idempotencyKey: string;
  readonly createdAt: Date;
  readonly lastCheckpoint: unknown;
}

/** One job for the isolate: which module and export to run, with what. */
export interface IsolatedRequest {
  readonly type: "run";
  /** The handler module's file URL. */
  readonly module: string;
  /** The name of the export that holds the handler. */
  readonly export: string;
  readonly payload: unknown;
  readonly context: IsolatedContext;
  /** Largest progress value accepted, in bytes of JSON (the isolate checks it as the in-process ctx does). */
  readonly maxProgressBytes: number;
}

/**
 * What the isolate reports while its handler runs, as JSON text taken when the handler
 * called (a value it changes afterwards is not what it reported). Progress is checked in
 * the isolate (ctx.progress throws there, at once, like the in-process one) and coalesced:
 * only the latest value is sent, and always before the reply. A checkpoint is sent as it is given
 * and answered by {@link IsolatedAnswer} with the same `seq`, once written or refused.
 */
export type IsolatedReport =
  | { readonly type: "progress"; readonly json: string }
  | { readonly type: "checkpoint"; readonly seq: number; readonly json: string };

/** The parent's answer to a checkpoint: written, or why not (a ValidationError, `lease_lost`, a database error). */
export interface IsolatedAnswer {
  readonly type: "checkpointed";
  readonly seq: number;
  readonly error?: ThrownValue;
}

/** Everything the parent sends: a job to run, or an answer about the running one. */
export type ToIsolate = IsolatedRequest | IsolatedAnswer;

/** Everything the isolate sends: reports while the handler runs, then one reply. */
export type FromIsolate = IsolatedReport | IsolatedReply;

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
      /** A ValidationError's field (parent to isolate only). */
      readonly field?: string;
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
