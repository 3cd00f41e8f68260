import { describe, expect, it } from "vitest";
import * as defaults from "./defaults.js";
import { resolveWorkerOptions } from "./worker/worker-options.js";

describe("defaults", () => {
  it("are the ones a worker actually uses", () => {
    // worker-options.ts still spells some of these out; this keeps the two equal.
    const settings = resolveWorkerOptions({ handlers: {} }, new Map());
    expect(settings.queues).toEqual(new Map([[defaults.defaultQueue, defaults.defaultConcurrency]]));
    expect(settings).toMatchObject({
      leaseMs: defaults.defaultLeaseMs,
      pollIntervalMs: defaults.defaultPollIntervalMs,
      shutdownTimeoutMs: defaults.defaultShutdownTimeoutMs,
      rescueIntervalMs: defaults.defaultRescueIntervalMs,
      flushDelayMs: defaults.defaultFlushDelayMs,
    });
  });
});
