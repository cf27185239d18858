// clock.js: the virtual-clock capability (docs/DRIVER.md sections 5 and 8)
// for the Node drivers, on @sinonjs/fake-timers.
//
// A Node client library arms its timeouts, backoffs and grace waits with the
// global setTimeout and setInterval. A VirtualClock replaces exactly those
// (setTimeout, clearTimeout, setInterval, clearInterval, and the same
// functions of node:timers and the setTimeout of node:timers/promises, which
// fake-timers patches alongside) with fake ones that fire only when
// clock.advance moves the clock. Everything Node's I/O runs on stays real:
// setImmediate, process.nextTick, queueMicrotask, performance, Date and
// Node's internal timers (child processes, pipes, sockets and HTTP use
// those, never the globals), so processes start, pipes flow and servers
// answer in real time; only waiting is virtual. AbortSignal.timeout, rebuilt
// by timers.js on the global setTimeout, follows the virtual clock too.
//
// It has no dependencies of its own: a driver passes in the fake-timers
// module from its own node_modules (its package.json pins the version).

// The real timers, for the driver's own real-time waits (a stderr pipe
// draining, the real-time bound of shutdown), taken before any clock is
// installed; timers.js (imported first by wire.js) has wrapped them, so the
// real clock's timers.pending still sees them.
import './timers.js';

export const realSetTimeout = globalThis.setTimeout;
export const realClearTimeout = globalThis.clearTimeout;

/** sleepReal resolves after ms of real time, whatever the clock. */
export function sleepReal(ms) {
  return new Promise((r) => realSetTimeout(r, ms));
}

// What a VirtualClock fakes: the timers a client library arms, nothing that
// Node's I/O needs to make progress.
const FAKED = ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'];

/** VirtualClock is the process's timers on a clock that moves only with advance. */
export class VirtualClock {
  constructor(fakeTimers) {
    this.clock = fakeTimers.install({ toFake: FAKED, now: 0, shouldClearNativeTimers: false });
    this.t0 = this.clock.now;
    this.queue = Promise.resolve();
  }

  /** now is the virtual offset from start in whole ms. */
  now() {
    return Math.floor(this.clock.now - this.t0);
  }

  /**
   * advance moves the clock forward by ms, firing in deadline order every
   * timer it passes; between timers the promise jobs and I/O callbacks they
   * started run, so a timer armed by a fired one's follow-up fires too when
   * it falls inside the advance. Advances run one after the other. Resolves
   * to the new offset.
   */
  advance(ms) {
    const run = this.queue.then(async () => {
      await this.clock.tickAsync(ms);
      return this.now();
    });
    this.queue = run.catch(() => {});
    return run;
  }

  /** pending lists the time left until each pending timer fires, soonest first, rounded up to whole ms. */
  pending() {
    const out = [];
    for (const t of this.clock.timers?.values() ?? []) {
      out.push(Math.max(0, Math.ceil(t.callAt - this.clock.now)));
    }
    return out.sort((a, b) => a - b);
  }

  /**
   * followRealTime makes the clock advance with real time from now on (the
   * real-time bound of shutdown: a library's stop grace then passes as it
   * would on the real clock).
   */
  followRealTime() {
    this.clock.setTickMode({ mode: 'interval', delta: 10 });
  }
}
