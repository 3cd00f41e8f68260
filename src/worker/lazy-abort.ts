/**
 * An AbortController made only when someone needs it: when a handler reads its signal,
 * or when the job must be aborted. A no-op job pays nothing for cancellation it never uses.
 */
export class LazyAbort {
  #controller: AbortController | undefined;

  get signal(): AbortSignal {
    return (this.#controller ??= new AbortController()).signal;
  }

  abort(reason: unknown): void {
    (this.#controller ??= new AbortController()).abort(reason);
  }
}
