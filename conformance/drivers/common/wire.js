// wire.js: the mcplife-driver/3 protocol plumbing shared by the Node drivers
// in conformance/drivers (docs/DRIVER.md sections 1-4): JSON lines on
// stdin/stdout, one serialized writer, numbered events, requests handled
// concurrently, tool.call outcomes as call_result lines, shutdown and EOF,
// and timers.pending (capability pending-timers, announced for every
// driver: timers.js sees the timers of the whole process). A driver that
// hands it @sinonjs/fake-timers (option fakeTimers) also announces
// virtual-clock: start with clock "virtual" fakes the process's timers
// (clock.js) and clock.advance, clock.pending and clock.now work on them.
//
// It has no dependencies and knows nothing about MCP: a driver gives it a
// table of method handlers and an implementation to announce.

import { pendingTimers } from './timers.js';
import { VirtualClock, realSetTimeout } from './clock.js';
import readline from 'node:readline';
import { performance } from 'node:perf_hooks';

export const PROTOCOL = 'mcplife-driver/3';
// PROTOCOL_2 is the previous version, answered to a harness that asks for
// it: without pending-timers, which version 3 added.
const PROTOCOL_2 = 'mcplife-driver/2';

/** DriverError is a response error with a stable code (docs/DRIVER.md section 10). */
export class DriverError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// stdout carries protocol lines only: everything console.log prints goes to
// stderr (a library logging with console.log would corrupt the stream).
console.log = console.error;
console.info = console.error;
console.debug = console.error;

/**
 * Wire runs the protocol loop. handlers maps method names to async functions
 * (params) => result; methods needing a runtime are refused with not_started
 * until start succeeded. hello, shutdown and the tool.call bookkeeping are
 * built in. eras are the MCP protocol eras the library speaks (legacy,
 * modern), announced in hello.
 */
export class Wire {
  constructor({ implementation, capabilities, profiles, eras, handlers, onShutdown, fakeTimers }) {
    this.implementation = implementation;
    // fakeTimers: the @sinonjs/fake-timers module, from the driver's own
    // node_modules; with it the driver announces virtual-clock.
    this.fakeTimers = fakeTimers;
    this.capabilities = [...(fakeTimers ? ['virtual-clock'] : []), ...capabilities, 'pending-timers'];
    this.clock = null; // the VirtualClock after a start with clock "virtual"
    this.profiles = profiles;
    this.eras = eras;
    this.handlers = handlers;
    this.onShutdown = onShutdown;
    this.seq = 0;
    this.t0 = performance.now();
    this.started = false;
    this.closing = null;
    this.calls = new Map(); // callId -> {done, abort()}
  }

  /**
   * now returns the driver clock's offset from start in whole ms: real
   * time, or virtual time after a start with clock "virtual".
   */
  now() {
    if (this.clock) return this.clock.now();
    return Math.floor(performance.now() - this.t0);
  }

  write(obj) {
    // One write per line from the one JS thread: lines never interleave.
    process.stdout.write(JSON.stringify(obj) + '\n');
  }

  /** event writes one event line; attrs values are strings, numbers or booleans. */
  event(kind, { server, session, attrs } = {}) {
    const ev = { seq: ++this.seq, at_ms: this.now(), kind };
    if (server) ev.server = server;
    if (session) ev.session = session;
    if (attrs && Object.keys(attrs).length > 0) {
      const clean = {};
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null) continue;
        clean[k] = typeof v === 'object' ? String(v) : v;
      }
      ev.attrs = clean;
    }
    this.write({ type: 'event', event: ev });
  }

  respond(id, result) {
    this.write({ type: 'response', id, result: result ?? {} });
  }

  fail(id, code, message) {
    this.write({ type: 'response', id, error: { code, message: String(message) } });
  }

  /**
   * startCall registers a tool call and runs fn(signal) in the background;
   * fn resolves to the call_result's {result, error?}. The caller answers
   * {accepted: true} before the outcome is written.
   */
  startCall(callId, fn) {
    if (this.calls.has(callId)) throw new DriverError('duplicate_id', `callId ${JSON.stringify(callId)} was used before`);
    const ac = new AbortController();
    const entry = { done: false, abort: (reason) => ac.abort(reason) };
    this.calls.set(callId, entry);
    entry.promise = (async () => {
      await new Promise((r) => setImmediate(r)); // {accepted: true} is written first
      let out;
      try {
        out = await fn(ac.signal);
      } catch (err) {
        out = { result: null, error: { code: 'failed', message: String(err?.message ?? err) } };
      }
      entry.done = true;
      const line = { type: 'call_result', callId, result: out.result };
      if (out.error) line.error = out.error;
      this.write(line);
    })();
  }

  cancelCall(callId) {
    const c = this.calls.get(callId);
    if (!c) throw new DriverError('unknown_id', `no tool call ${JSON.stringify(callId)}`);
    if (c.done) return { running: false };
    c.abort('cancelled by the caller');
    return { running: true };
  }

  async handle(line) {
    let req;
    try {
      req = JSON.parse(line);
    } catch (err) {
      this.fail(null, 'bad_request', `not JSON: ${err.message}`);
      return;
    }
    if (typeof req !== 'object' || req === null || !Number.isInteger(req.id) || req.id < 0) {
      this.fail(null, 'bad_request', 'a request is an object with a non-negative integer id');
      return;
    }
    const { id, method } = req;
    const params = req.params ?? {};
    if (typeof method !== 'string' || typeof params !== 'object' || Array.isArray(params)) {
      this.fail(id, 'bad_request', 'method must be a string and params an object');
      return;
    }
    if (method === 'hello') {
      const v2 = params.protocol === PROTOCOL_2;
      this.respond(id, {
        protocol: v2 ? PROTOCOL_2 : PROTOCOL,
        implementation: this.implementation,
        capabilities: v2 ? this.capabilities.filter((c) => c !== 'pending-timers') : this.capabilities,
        profiles: this.profiles,
        eras: this.eras,
      });
      return;
    }
    if (method === 'shutdown') {
      await this.shutdown();
      this.respond(id, {});
      process.exit(0);
    }
    if (method === 'clock.advance' || method === 'clock.pending') {
      this.clockMethod(id, method, params);
      return;
    }
    if (this.closing) {
      this.fail(id, 'shutting_down', 'the driver is shutting down');
      return;
    }
    if (method === 'tool.cancel') {
      if (!this.started) return this.fail(id, 'not_started', 'start first');
      try {
        this.respond(id, this.cancelCall(params.callId));
      } catch (err) {
        this.fail(id, err.code ?? 'failed', err.message);
      }
      return;
    }
    if (method === 'clock.now') {
      if (!this.started) return this.fail(id, 'not_started', 'start first');
      this.respond(id, { nowMs: this.now() });
      return;
    }
    if (method === 'timers.pending') {
      if (!this.started) return this.fail(id, 'not_started', 'start first');
      if (this.clock) return this.fail(id, 'unsupported', 'timers.pending is the real clock\'s; this driver started with clock "virtual" (use clock.pending)');
      this.respond(id, { timersMs: pendingTimers() });
      return;
    }
    const h = this.handlers[method];
    if (!h) {
      const known = ['acquire', 'release', 'status', 'reload', 'server.disconnect', 'clock.advance', 'clock.pending'];
      if (known.includes(method)) this.fail(id, 'unsupported', `${method} needs a capability this driver does not announce`);
      else this.fail(id, 'unknown_method', `no method ${JSON.stringify(method)}`);
      return;
    }
    if (method === 'start') {
      if (this.started) return this.fail(id, 'already_started', 'start was already called');
      if (params.clock !== 'real' && params.clock !== 'virtual') {
        return this.fail(id, 'bad_request', 'start.clock must be "virtual" or "real"');
      }
      if (params.clock === 'virtual' && !this.fakeTimers) {
        return this.fail(id, 'unsupported', 'this driver runs on the real clock only (no virtual-clock capability)');
      }
      this.t0 = performance.now();
      if (params.clock === 'virtual' && !this.clock) this.clock = new VirtualClock(this.fakeTimers);
    } else if (!this.started) {
      return this.fail(id, 'not_started', 'start first');
    }
    try {
      const result = await h(params, id);
      if (method === 'start') this.started = true;
      if (this.closing && method !== 'start') {
        this.fail(id, 'shutting_down', 'the driver is shutting down');
        return;
      }
      this.respond(id, result);
    } catch (err) {
      this.fail(id, err instanceof DriverError ? err.code : 'failed', err?.message ?? String(err));
    }
  }

  /**
   * clockMethod answers clock.advance and clock.pending (capability
   * virtual-clock), in the order of docs/DRIVER.md section 5.
   */
  async clockMethod(id, method, params) {
    if (!this.fakeTimers) return this.fail(id, 'unsupported', `${method} needs the virtual-clock capability, which this driver does not announce`);
    if (this.closing) return this.fail(id, 'shutting_down', 'the driver is shutting down');
    const fields = method === 'clock.advance' ? ['ms'] : [];
    const extra = Object.keys(params).filter((k) => !fields.includes(k));
    if (extra.length > 0) return this.fail(id, 'bad_request', `unknown params field ${JSON.stringify(extra[0])}`);
    if (method === 'clock.advance' && !(Number.isInteger(params.ms) && params.ms >= 0)) {
      return this.fail(id, 'bad_request', 'clock.advance needs ms, a non-negative integer');
    }
    if (!this.started) return this.fail(id, 'not_started', 'start first');
    if (!this.clock) return this.fail(id, 'unsupported', `${method} needs clock "virtual"; this driver started with clock "real"`);
    if (method === 'clock.pending') return this.respond(id, { timersMs: this.clock.pending() });
    try {
      this.respond(id, { nowMs: await this.clock.advance(params.ms) });
    } catch (err) {
      this.fail(id, 'failed', err?.message ?? String(err));
    }
  }

  /** shutdown aborts every call in flight and closes the implementation, once. */
  shutdown() {
    if (!this.closing) {
      this.closing = (async () => {
        // shutdown is bounded in real time whatever the clock: the virtual
        // clock follows real time from here on, so the library's stop
        // grace waits pass as they would on the real clock.
        this.clock?.followRealTime();
        const pending = [...this.calls.values()].filter((c) => !c.done);
        for (const c of pending) c.abort('shutdown');
        // Aborted calls write their call_result lines before the response;
        // bounded in real time.
        await Promise.race([
          Promise.allSettled(pending.map((c) => c.promise)),
          new Promise((r) => realSetTimeout(r, 5000).unref()),
        ]);
        try {
          await this.onShutdown?.();
        } catch (err) {
          console.error('shutdown:', err);
        }
        this.event('runtime.closed');
      })();
    }
    return this.closing;
  }

  /** run reads requests until EOF (which means shutdown) and exits 0. */
  run() {
    const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
    rl.on('line', (line) => {
      if (line.trim() === '') return;
      this.handle(line).catch((err) => console.error('driver:', err));
    });
    rl.on('close', async () => {
      await this.shutdown();
      process.exit(0);
    });
    for (const sig of ['SIGTERM', 'SIGINT']) {
      process.on(sig, async () => {
        await this.shutdown();
        process.exit(0);
      });
    }
  }
}
