// timers.js: the pending-timers capability of mcplife-driver/3 (docs/DRIVER.md
// sections 5 and 8) for the Node drivers. On the real clock the harness
// decides that a wait can no longer succeed once the implementation is idle
// and none of its timers is due before the wait's bound; this module lets
// a driver list those timers.
//
// Importing it wraps the global setTimeout and setInterval so that every
// timer the process sets (the client library's and the driver's own) is
// remembered, and rebuilds AbortSignal.timeout on the wrapped setTimeout
// (Node's own is out of sight). A timer is pending while Node has it armed:
// not fired (a setTimeout), not cleared; refresh() re-arms it. The time left
// is read from the Timeout object itself, so refresh and intervals need no
// bookkeeping. Timers set through node:timers/promises or before this module
// was imported are not seen: when Node reports more active timers than are
// seen, or a setImmediate is queued, pendingTimers lists one due now, so the
// harness never takes the implementation for idle.
//
// One kind of timer is not listed: the keep-alive timer of Node's own HTTP
// client (undici, behind fetch), which closes a pooled socket that has sat
// idle. Its firing cannot make the implementation act (no request is on
// that socket), and it is re-armed after every request, so listing it would
// keep a client that retries over HTTP from ever looking idle. It is the
// platform's, like Go's net/http idle-connection timers, which the reference
// runtime's clock does not see either. It is told by its creator: a native
// timer set by undici's Parser.setTimeout (undici sets its header and body
// timeouts through its own 500 ms tick, which stays listed). Should a Node
// release move it, the timer is listed again: verdicts come slower, never
// wrong.
//
// It has no dependencies and knows nothing about MCP.

const nativeSetTimeout = globalThis.setTimeout;
const nativeSetInterval = globalThis.setInterval;
const nativeClearTimeout = globalThis.clearTimeout;

// Every timer set since import, held weakly: a timer nobody references any
// more cannot be re-armed, and one that is armed is referenced by Node.
const seen = new Set();

// The keep-alive timers of Node's HTTP client's connection pool (above).
const poolTimers = new WeakSet();

// keepAliveCaller matches the stack frame of undici's Parser.setTimeout, in
// Node's bundled copy or in an installed one.
const keepAliveCaller = /^\s*at Parser\.setTimeout \((node:internal\/deps\/undici\/|.*\/node_modules\/undici\/)/m;

// setByPool reports whether the caller of fn (a wrapped setTimeout) is
// undici's Parser.setTimeout.
function setByPool(fn) {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 1;
  const site = {};
  Error.captureStackTrace(site, fn);
  Error.stackTraceLimit = limit;
  return keepAliveCaller.test(site.stack);
}

function remember(timer) {
  if (timer && typeof timer === 'object') {
    seen.add(new WeakRef(timer));
    if (seen.size % 4096 === 0) prune();
  }
  return timer;
}

// prune forgets the timers that were collected.
function prune() {
  for (const ref of seen) if (ref.deref() === undefined) seen.delete(ref);
}

function wrap(native, pooled) {
  const wrapped = function (...args) {
    const t = remember(native.apply(this, args));
    if (pooled && t && typeof t === 'object' && setByPool(wrapped)) poolTimers.add(t);
    return t;
  };
  // Keep util.promisify(setTimeout) and friends working.
  for (const key of Reflect.ownKeys(native)) {
    if (key !== 'length' && key !== 'name' && key !== 'prototype') {
      try {
        wrapped[key] = native[key];
      } catch {
        // a read-only property: leave it
      }
    }
  }
  Object.defineProperty(wrapped, 'name', { value: native.name });
  return wrapped;
}

globalThis.setTimeout = wrap(nativeSetTimeout, true);
globalThis.setInterval = wrap(nativeSetInterval, false);

// AbortSignal.timeout(ms) on a seen timer; like Node's, its timer does not
// keep the process alive and the signal aborts with a TimeoutError.
AbortSignal.timeout = function timeout(ms) {
  const ac = new AbortController();
  const t = globalThis.setTimeout(() => {
    ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, ms);
  t.unref();
  return ac.signal;
};

// armed reports whether Node has timer t armed: set, not fired (unless it
// repeats or was refreshed), not cleared.
function armed(t) {
  return t._destroyed !== true && typeof t._idleTimeout === 'number' && t._idleTimeout >= 0;
}

/**
 * pendingTimers returns the time left, in whole ms rounded up, until each
 * armed timer fires (but the HTTP pool's keep-alive), soonest first. A
 * setImmediate queued, or more active timers in Node than this module has
 * seen, adds a 0: work is due now.
 */
export function pendingTimers() {
  // The loop's time, in the base of the timers' _idleStart.
  const probe = nativeSetTimeout(() => {}, 1 << 30);
  const now = probe._idleStart;
  nativeClearTimeout(probe);
  const out = [];
  let refedSeen = 0;
  for (const ref of seen) {
    const t = ref.deref();
    if (t === undefined) {
      seen.delete(ref);
      continue;
    }
    if (!armed(t)) continue;
    if (t.hasRef()) refedSeen++;
    if (poolTimers.has(t)) continue;
    out.push(Math.max(0, Math.ceil(t._idleStart + t._idleTimeout - now)));
  }
  const active = process.getActiveResourcesInfo();
  const refedActive = active.filter((r) => r === 'Timeout').length;
  if (refedActive > refedSeen || active.includes('Immediate')) out.push(0);
  return out.sort((a, b) => a - b);
}
