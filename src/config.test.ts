import { describe, expect, it } from "vitest";
import { type ErrandConfig, defineConfig, handlersOf, kindsOf } from "./config.js";
import { ValidationError } from "./errors.js";
import { resolveKinds } from "./options.js";

const sendEmail = async (_payload: { to: string }) => {};
const config = defineConfig({
  kinds: {
    send_email: { retry: { baseDelayMs: 100 }, leaseMs: 60_000, maxAttempts: 3, priority: 5, handler: sendEmail },
    audit: { maxAttempts: 1 }, // enqueued here, run elsewhere
  },
  schedules: [{ name: "nightly", cron: "0 2 * * *", kind: "send_email", payload: { to: "ops@example.com" } }],
  worker: { concurrency: 20 },
});

describe("defineConfig", () => {
  it("returns the config with every part present, so each can be passed on as it is", () => {
    expect(defineConfig({})).toEqual({ kinds: {}, schedules: [], worker: {} });
    expect(config.schedules.map((s) => s.name)).toEqual(["nightly"]);
    expect(config.worker).toEqual({ concurrency: 20 });
    expect(defineConfig(config)).toEqual(config); // checking twice (the CLI does) changes nothing
  });

  it("splits into the kinds' settings for Errand.open and the handlers for a worker", () => {
    expect(kindsOf(config)).toEqual({ send_email: { retry: { baseDelayMs: 100 }, leaseMs: 60_000, maxAttempts: 3, priority: 5 }, audit: { maxAttempts: 1 } });
    expect(resolveKinds(kindsOf(config)).get("send_email")).toMatchObject({ leaseMs: 60_000, maxAttempts: 3, priority: 5, retry: { baseDelayMs: 100 } });
    expect(handlersOf(config)).toEqual({ send_email: sendEmail });
  });

  it.each<[string, unknown, RegExp]>([
    ["a misspelt part", { schedule: [] }, /^schedule: unknown option — did you mean 'schedules'\?/],
    ["a config that is not an object", [], /^config: must be an object/],
    ["kinds that are not an object", { kinds: [] }, /^kinds: must be an object mapping kind/],
    ["a kind that is not an object", { kinds: { email: null } }, /^kinds\.email: must be an object/],
    ["a misspelt kind setting", { kinds: { email: { lease: 1000 } } }, /^kinds\.email\.lease: unknown option — did you mean 'leaseMs'\?/],
    ["a handler that is not a function", { kinds: { email: { handler: "./email.js" } } }, /^kinds\.email\.handler: must be a function/],
    ["a bad backoff", { kinds: { email: { retry: { baseDelay: 100 } } } }, /^kinds\.email\.retry\.baseDelay: unknown option/],
    ["a bad lease", { kinds: { email: { leaseMs: -1 } } }, /^kinds\.email\.leaseMs: must be a positive number/],
    ["an empty kind name", { kinds: { "": {} } }, /^kinds: must be a non-empty string/],
    ["schedules that are not a list", { schedules: {} }, /^schedules: must be an array/],
    ["a bad cron", { schedules: [{ name: "a", cron: "0 2 * *", kind: "k" }] }, /^schedules\[0\]\.cron: '0 2 \* \*' is not a valid cron expression/],
    ["a schedule declared twice", { schedules: [{ name: "a", cron: "@daily", kind: "k" }, { name: "a", cron: "@hourly", kind: "k" }] }, /^schedules\[1\]\.name: 'a' is declared twice/],
    ["a misspelt worker setting", { worker: { concurency: 5 } }, /^worker\.concurency: unknown option — did you mean 'concurrency'\?/],
    ["a worker setting out of range", { worker: { concurrency: 0 } }, /^worker\.concurrency: must be an integer from 1/],
    ["a heartbeat longer than a kind's lease", { kinds: { k: { leaseMs: 1000 } }, worker: { heartbeatIntervalMs: 2000 } }, /^worker\.heartbeatIntervalMs: must be shorter than the shortest lease \(1000 ms\)/],
  ])("refuses %s, naming the field", (_what, bad, message) => {
    let thrown: unknown;
    try {
      defineConfig(bad as ErrandConfig);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ValidationError);
    expect((thrown as Error).message).toMatch(message);
  });
});
