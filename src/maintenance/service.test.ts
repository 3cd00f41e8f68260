import { describe, expect, it, vi } from "vitest";
import { Repeater } from "./service.js";

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe("Repeater", () => {
  it("runs once before start() resolves, then again after each run ends, never two at once", async () => {
    let active = 0;
    let mostActive = 0;
    let runs = 0;
    const repeater = new Repeater(async () => {
      runs++;
      mostActive = Math.max(mostActive, ++active);
      await flush();
      active--;
    }, 1);
    await repeater.start();
    expect(runs).toBe(1);
    await vi.waitFor(() => expect(runs).toBeGreaterThanOrEqual(5), { timeout: 10_000 });
    await repeater.stop();
    expect(mostActive).toBe(1);
  });

  it("stop() waits for the run in progress, and no run starts after it", async () => {
    let runs = 0;
    let release: (() => void) | undefined;
    const repeater = new Repeater(async () => {
      if (++runs === 2) await new Promise<void>((resolve) => (release = resolve));
    }, 1);
    await repeater.start();
    await vi.waitFor(() => expect(release).toBeDefined(), { timeout: 10_000 });
    let stopped = false;
    const stopping = repeater.stop().then(() => (stopped = true));
    await flush();
    expect(stopped).toBe(false);
    release!();
    await stopping;
    await flush();
    expect(runs).toBe(2);
  });

  it("a second start() while running does not start a second loop", async () => {
    let runs = 0;
    const repeater = new Repeater(async () => void runs++, 60_000);
    await repeater.start();
    await repeater.start();
    await repeater.stop();
    expect(runs).toBe(1);
  });
});
