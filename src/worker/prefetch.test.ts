import { describe, expect, it } from "vitest";
import { Prefetch } from "./prefetch.js";

/** A clock that moves only when the test says so. */
function manualClock(start = 10_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

const finish = (prefetch: Prefetch, n: number) => {
  for (let i = 0; i < n; i++) prefetch.finished();
};

describe("Prefetch", () => {
  it("a fixed prefetch stays fixed, whatever finishes", () => {
    const clock = manualClock();
    const prefetch = new Prefetch(10, 3, clock);
    expect(prefetch.size()).toBe(3);
    finish(prefetch, 5_000);
    clock.advance(600);
    expect(prefetch.size()).toBe(3);
  });

  it("adaptive: nothing ahead until handlers finish, then at least concurrency and at most 4000", () => {
    const clock = manualClock();
    const prefetch = new Prefetch(10, undefined, clock);
    expect(prefetch.size()).toBe(0);
    finish(prefetch, 3);
    expect(prefetch.size()).toBe(10);
    finish(prefetch, 397);
    expect(prefetch.size()).toBe(400);
    finish(prefetch, 1_200);
    expect(prefetch.size()).toBe(1_600);
    finish(prefetch, 2_000);
    expect(prefetch.size()).toBe(3_600);
    finish(prefetch, 5_000);
    expect(prefetch.size()).toBe(4000);
  });

  it("adaptive: follows the last quarter second, and drops to 0 once nothing finished for one", () => {
    const clock = manualClock();
    const prefetch = new Prefetch(10, undefined, clock);
    prefetch.size(); // opens the first window
    finish(prefetch, 300);
    clock.advance(250);
    // A new window: the previous one's 300 still count until this one has more.
    expect(prefetch.size()).toBe(300);
    finish(prefetch, 50);
    expect(prefetch.size()).toBe(300);
    clock.advance(250);
    expect(prefetch.size()).toBe(50);
    clock.advance(250);
    expect(prefetch.size()).toBe(0);
  });

  it("adaptive: a pause of half a second or more forgets what came before it", () => {
    const clock = manualClock();
    const prefetch = new Prefetch(10, undefined, clock);
    prefetch.size();
    finish(prefetch, 300);
    clock.advance(500);
    expect(prefetch.size()).toBe(0);
  });
});
