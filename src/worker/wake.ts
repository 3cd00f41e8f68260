/**
 * A level-triggered wake-up: `wake()` before or during `wait()` makes it resolve now;
 * otherwise `wait(ms)` resolves after `ms`. Many wakes fold into one.
 */
export class Wake {
  #pending = false;
  #resolve: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;

  wake(): void {
    if (this.#resolve) this.#finish();
    else this.#pending = true;
  }

  /** Resolves true when woken, false on timeout. */
  wait(ms: number): Promise<boolean> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      this.#resolve = () => resolve(true);
      this.#timer = setTimeout(() => {
        this.#resolve = undefined;
        this.#timer = undefined;
        resolve(false);
      }, ms);
    });
  }

  #finish(): void {
    const resolve = this.#resolve;
    this.#resolve = undefined;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    resolve?.();
  }
}
