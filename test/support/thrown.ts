/** `error` with its (lazily formatted) stack read once, so redefining its properties does not format it again. */
function withStack(error: Error): Error {
  void error.stack;
  return error;
}

/** Values a handler may throw that break naive describing (String(), JSON, templates). */
export function nastyThrownValues(): Record<string, () => unknown> {
  const revocable = Proxy.revocable({}, {});
  revocable.revoke();
  const cyclic = new Error("outer");
  (cyclic as { cause?: unknown }).cause = cyclic;
  const cyclicObject: Record<string, unknown> = { name: "loop" };
  cyclicObject.self = cyclicObject;
  return {
    "an Error whose message is a Symbol": () => Object.assign(new Error("x"), { message: Symbol("m") }),
    "an object whose toString and toJSON throw": () => ({
      toString() {
        throw new Error("no toString");
      },
      toJSON() {
        throw new Error("no toJSON");
      },
    }),
    "an Error whose getters throw": () =>
      Object.defineProperties(withStack(new Error("x")), {
        message: { get: () => { throw new Error("no message"); } },
        stack: { get: () => { throw new Error("no stack"); } },
        cause: { get: () => { throw new Error("no cause"); } },
      }),
    "a Proxy whose every trap throws": () =>
      new Proxy(new Error("x"), {
        get: () => { throw new Error("get"); },
        getPrototypeOf: () => { throw new Error("getPrototypeOf"); },
        has: () => { throw new Error("has"); },
        ownKeys: () => { throw new Error("ownKeys"); },
        getOwnPropertyDescriptor: () => { throw new Error("getOwnPropertyDescriptor"); },
      }),
    "a revoked Proxy": () => revocable.proxy,
    "an Error that is its own cause": () => cyclic,
    "a cyclic object": () => cyclicObject,
    "a Symbol": () => Symbol("thrown"),
    "null": () => null,
    "a BigInt": () => 10n,
  };
}
