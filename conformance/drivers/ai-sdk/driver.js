#!/usr/bin/env node
// driver.js: an mcplife-driver/3 driver (docs/DRIVER.md) for the Vercel AI
// SDK's MCP client (@ai-sdk/mcp). It is the small host an AI SDK user writes:
// one createMCPClient per configured server (the package's StdioMCPTransport,
// or its own http / sse transport), the tools of client.tools() handed to the
// agent under the names the library gives them, and calls through the
// client's callTool with the library's own per-request timeout and
// AbortSignal. Processes, the era probe (server/discover, then initialize),
// timeouts, cancellation and closing are the library's own; the driver adds
// no restarts, retries or timeouts. See README.md for what it claims and why.

import fs from 'node:fs';

import { createMCPClient } from '@ai-sdk/mcp';
import { StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';

import { Wire, DriverError } from '../common/wire.js';
import { loadConfig, toolName, Tail, packageVersion } from '../common/host.js';

const VERSION = packageVersion(new URL('./', import.meta.url), '@ai-sdk/mcp');
// How long shutdown waits (real time) to see a stopped process exit, so
// that its process.exited event is written; it never signals anything.
const EXIT_WAIT_MS = 5000;

let wire;
let options = {};
let startParams = {};
const servers = new Map(); // name -> Server, in configuration order
const invalid = new Map(); // name -> {error, source}
const sessions = new Set();

/** rawServer returns the server object of def as configured (host.js keeps only some fields). */
function rawServer(def) {
  if (def.source.level === 'inline') return startParams.inline?.[def.name] ?? {};
  try {
    return JSON.parse(fs.readFileSync(def.source.file, 'utf8'))?.mcpServers?.[def.name] ?? {};
  } catch {
    return {};
  }
}

/** Server is one configured server and its MCP client. */
class Server {
  constructor(def) {
    this.def = def;
    const raw = rawServer(def);
    // The library's own knobs, where the configuration names them: the
    // initialization bound (initializationOptions.timeout; the library has
    // none by default) and the stdio working directory.
    this.initTimeout = Number.isInteger(raw.timeout) && raw.timeout > 0 ? raw.timeout : undefined;
    this.cwd = typeof raw.cwd === 'string' ? raw.cwd : undefined;
    this.state = def.enabled ? 'disconnected' : 'disabled';
    this.client = null;
    this.tools = []; // [{name, tool, description, inputSchema, requiresApproval, lib}]
    this.error = '';
    this.stderr = new Tail();
    this.pid = 0;
    this.child = null;
    this.exited = null; // a promise resolved when the child has closed
    this.connectedAtMs = undefined;
    this.connecting = null;
    this.stopping = false; // the library (or the driver's shutdown) closed the transport
    // initializationOptions.signal: how a host cancels a createMCPClient
    // still initializing when it shuts down.
    this.initAbort = new AbortController();
  }

  get name() {
    return this.def.name;
  }

  /** transport returns what createMCPClient takes: the stdio transport object, or the http/sse config. */
  transport() {
    const d = this.def;
    if (d.transport !== 'stdio') return { type: d.transport, url: d.url, headers: d.headers };
    // stderr "pipe" (the library's option; its default is "inherit") so that
    // the tail can be shown in the status.
    const t = new StdioMCPTransport({ command: d.command, args: d.args, env: d.env, cwd: this.cwd, stderr: 'pipe' });
    const start = t.start.bind(t);
    t.start = async () => {
      const started = start();
      // The library spawns synchronously inside start(); its ChildProcess is
      // the transport's (TypeScript-private) process field.
      const child = t.process;
      if (child) this.watch(child);
      await started;
      this.pid = child?.pid ?? 0;
      wire.event('process.started', { server: this.name, attrs: { pid: this.pid, command: d.command } });
    };
    const close = t.close.bind(t);
    t.close = async (...args) => {
      // StdioMCPTransport.close aborts the spawn's AbortSignal: Node sends
      // the child SIGTERM (its default killSignal), nothing else.
      const child = this.child;
      this.stopping = true;
      if (child && child.exitCode === null && child.signalCode === null) {
        wire.event('process.signaled', { server: this.name, attrs: { pid: child.pid, step: 'SIGTERM' } });
      }
      return close(...args);
    };
    return t;
  }

  /** watch observes the library's child process: stderr, exit, close. */
  watch(child) {
    this.child = child;
    child.stderr?.on('data', (chunk) => this.stderr.push(chunk));
    this.exited = new Promise((resolve) => child.once('close', resolve));
    child.once('exit', (code, signal) => {
      if (!child.pid) return; // never spawned
      const planned = this.stopping;
      wire.event('process.exited', {
        server: this.name,
        attrs: { pid: child.pid, status: signal ? `killed by ${signal}` : `exit status ${code}`, planned },
      });
    });
    child.once('close', () => {
      if (this.stopping || this.state !== 'connected') return;
      // The library closes the client on the process's "close" and never
      // reconnects: the server stays down.
      wire.event('transport.closed', { server: this.name, attrs: { transport: 'stdio', error: 'connection closed' } });
      const tail = this.stderr.toString();
      this.state = 'failed';
      this.connectedAtMs = undefined;
      this.error = 'connection closed' + (tail ? `; stderr: ${tail}` : '');
    });
  }

  /** connect runs createMCPClient (discover or initialize) and client.tools() (every tools/list page), once. */
  connect() {
    if (this.connecting) return this.connecting;
    this.connecting = (async () => {
      const d = this.def;
      this.state = 'connecting';
      wire.event('server.connecting', { server: this.name, attrs: { transport: d.transport, attempt: 0, timeout_ms: this.initTimeout ?? 0 } });
      const config = {
        transport: this.transport(),
        onUncaughtError: (err) => console.error(`[${this.name}] ${err?.message ?? err}`),
      };
      config.initializationOptions = { signal: this.initAbort.signal };
      if (this.initTimeout !== undefined) config.initializationOptions.timeout = this.initTimeout;
      try {
        this.client = await createMCPClient(config);
        const set = await this.client.tools();
        this.tools = Object.entries(set).map(([name, t]) => ({
          name,
          tool: name,
          description: t.description ?? '',
          inputSchema: t.inputSchema?.jsonSchema ?? {},
          requiresApproval: Boolean(t.needsApproval),
          lib: t,
        }));
        this.state = 'connected';
        this.error = '';
        this.connectedAtMs = wire.now();
        wire.event('server.connected', {
          server: this.name,
          attrs: { transport: d.transport, attempt: 0, tools: this.tools.length, protocol: this.client.initializeResult?.protocolVersion ?? '' },
        });
        for (const s of sessions) this.announceTools(s);
      } catch (err) {
        // createMCPClient closed the transport itself; see the process end
        // so that its stderr is read to the end (bounded in real time).
        if (this.client) await this.client.close().catch(() => {});
        if (this.exited) await Promise.race([this.exited, new Promise((r) => setTimeout(r, 2000).unref())]);
        const tail = this.stderr.toString();
        const message = String(err?.message ?? err);
        this.error = message + (tail ? `; stderr: ${tail}` : '');
        this.state = 'failed';
        wire.event('server.failed', { server: this.name, attrs: { transport: d.transport, error: message, stderr: tail } });
      } finally {
        this.connecting = null;
      }
    })();
    return this.connecting;
  }

  announceTools(session) {
    if (this.state !== 'connected') return;
    wire.event('tools.registered', {
      server: this.name,
      session,
      attrs: { tools: this.tools.length, deferred: false, names: this.tools.map((t) => t.name).sort().join(',') },
    });
  }

  /**
   * close cancels a createMCPClient still initializing (its signal) or
   * calls client.close(), then waits, bounded in real time, to see the
   * process exit.
   */
  async close() {
    this.initAbort.abort(new Error('the host is shutting down'));
    if (this.client) {
      this.stopping = true;
      await this.client.close().catch((err) => console.error(`[${this.name}] close: ${err?.message ?? err}`));
    }
    const bound = () => new Promise((r) => setTimeout(r, EXIT_WAIT_MS).unref());
    if (this.connecting) await Promise.race([this.connecting.catch(() => {}), bound()]);
    if (this.exited) await Promise.race([this.exited, bound()]);
  }

  status() {
    const st = {
      name: this.name,
      state: this.state,
      transport: this.def.transport,
      tools: this.state === 'connected' ? this.tools.length : 0,
      deferred: false,
      source: this.def.source,
      shared: true,
      refs: this.state === 'connected' ? sessions.size : 0,
      restartAttempts: 0,
      // The library never reconnects a closed client.
      policy: 'never',
    };
    if (this.error) st.error = this.error;
    const tail = this.stderr.toString();
    if (tail) st.stderr = tail;
    if (this.connectedAtMs !== undefined) st.connectedAtMs = this.connectedAtMs;
    if (this.pid && this.state === 'connected') st.pid = this.pid;
    return st;
  }
}

/**
 * sessionTools lists every client's tools() record, in configuration order
 * and each in the server's order, under the names the library gives them
 * (the raw MCP names). The AI SDK has no tool set of several servers: a
 * host merges the records itself, and a spread ({...a, ...b}) would let one
 * server's tool hide another's of the same name, so none is merged here.
 */
function sessionTools() {
  const out = [];
  for (const s of servers.values()) {
    for (const t of s.tools) out.push({ ...t, server: s.name });
  }
  return out;
}

/**
 * findTool looks a called name up in the session's tools: the suite's
 * mcp_<server>_<tool> name (an alias, so that calls are judged apart from
 * naming), else the library's name (the first server's, when several list
 * it).
 */
function findTool(name) {
  const all = sessionTools();
  return all.find((t) => toolName(t.server, t.tool) === name) ?? all.find((t) => t.name === name);
}

function needSession(name) {
  if (!sessions.has(name)) throw new DriverError('unknown_session', `no open session ${JSON.stringify(name)}`);
}

/** modelText flattens the tool's toModelOutput (the text the model receives) to one string. */
function modelText(out) {
  if (out == null) return '';
  if (out.type === 'text' || out.type === 'error-text') return String(out.value);
  if (out.type === 'content' && Array.isArray(out.value)) {
    return out.value.map((p) => (p.type === 'text' ? p.text : JSON.stringify(p))).join('\n');
  }
  return JSON.stringify(out.value ?? out);
}

/** classify maps what callTool threw (an MCPClientError; src/tool/mcp-client.ts) to an outcome code. */
function classify(err, signal) {
  if (signal.aborted) return 'aborted';
  const m = String(err?.message ?? err);
  if (/^Request timed out after/.test(m)) return 'mcp_tool_timeout';
  if (m === 'Connection closed') return 'mcp_connection_lost';
  return 'failed';
}

async function callTool(p, signal) {
  const base = { isError: true, aborted: false, code: '', truncated: false, originalChars: 0, signals: [], server: '', tool: p.tool };
  const t = findTool(p.tool);
  if (!t) {
    const message = `no tool ${JSON.stringify(p.tool)} in session ${JSON.stringify(p.session)}`;
    return { result: { ...base, text: message, originalChars: message.length, code: 'unknown_tool' }, error: { code: 'unknown_tool', message } };
  }
  const srv = servers.get(t.server);
  const call = `${p.session}-${p.callId}`;
  const input = p.arguments ?? {};
  // The library's per-request timeout (RequestOptions.timeout); none unless
  // the configuration gives one, as the library has no default.
  const timeout = p.timeoutMs ?? options.toolTimeoutMs ?? 0;
  const requestOptions = { signal };
  if (timeout > 0) requestOptions.timeout = timeout;
  wire.event('tool.call_started', { server: srv.name, session: p.session, attrs: { call, tool: t.name } });
  const finish = (outcome, code) =>
    wire.event('tool.call_finished', { server: srv.name, session: p.session, attrs: { call, tool: t.name, outcome, code } });
  try {
    if (!srv.client) throw new Error(`server ${JSON.stringify(srv.name)} is not connected`);
    // What the tool's execute does (src/tool/mcp-client.ts,
    // toolsFromDefinitions), with the library's timeout option added.
    const res = await srv.client.callTool({ name: t.tool, arguments: input, options: requestOptions });
    const out = t.lib.toModelOutput ? await t.lib.toModelOutput({ toolCallId: call, input, output: res }) : { type: 'json', value: res };
    const text = modelText(out);
    const isError = res.isError === true;
    finish(isError ? 'tool_error' : 'ok', '');
    return { result: { ...base, text, isError, originalChars: text.length, server: srv.name, tool: t.name } };
  } catch (err) {
    const code = classify(err, signal);
    const message = String(err?.message ?? err);
    if (code === 'aborted') {
      finish('aborted', '');
      return { result: { ...base, text: '', aborted: true, code, server: srv.name, tool: t.name }, error: { code, message } };
    }
    if (code === 'mcp_tool_timeout') {
      wire.event('tool.timeout', { server: srv.name, session: p.session, attrs: { call, tool: t.name, timeout_ms: timeout } });
    }
    // A thrown execute reaches the model as its error message.
    finish('error', code.startsWith('mcp_') ? code : '');
    return { result: { ...base, text: message, code, originalChars: message.length, server: srv.name, tool: t.name }, error: { code, message } };
  }
}

const handlers = {
  async start(p) {
    startParams = p;
    options = p.options ?? {};
    const cfg = loadConfig(p, (kind, e) => wire.event(kind, e));
    for (const def of cfg.servers) {
      servers.set(def.name, new Server(def));
      if (!def.enabled) wire.event('server.disabled', { server: def.name, attrs: { file: def.source.file } });
    }
    for (const bad of cfg.invalid) invalid.set(bad.name, bad);
    return {};
  },

  async 'session.open'(p) {
    if (typeof p.session !== 'string' || p.session === '') throw new DriverError('bad_request', 'session must be a non-empty string');
    if (sessions.has(p.session)) throw new DriverError('session_exists', `session ${JSON.stringify(p.session)} is open`);
    sessions.add(p.session);
    const t0 = wire.now();
    wire.event('session.opened', { session: p.session });
    const enabled = [...servers.values()].filter((s) => s.def.enabled);
    // Each server is connected once, at the first session; a client that
    // failed or closed is not created again (the library has no reconnect).
    await Promise.all(
      enabled.map(async (s) => {
        if (s.state === 'disconnected' || s.connecting) await s.connect();
        else if (s.state === 'connected') s.announceTools(p.session);
      }),
    );
    const report = { ready: [], failed: [], deferred: [], late: [], errors: {}, elapsedMs: wire.now() - t0 };
    for (const s of enabled) {
      if (s.state === 'connected') report.ready.push(s.name);
      else {
        report.failed.push(s.name);
        report.errors[s.name] = s.error || s.state;
      }
    }
    for (const [name, bad] of invalid) {
      report.failed.push(name);
      report.errors[name] = bad.error;
    }
    report.ready.sort();
    report.failed.sort();
    return { report };
  },

  async 'session.close'(p) {
    needSession(p.session);
    sessions.delete(p.session);
    wire.event('session.closed', { session: p.session });
    return {};
  },

  async 'tools.list'(p) {
    needSession(p.session);
    return {
      tools: sessionTools().map((t) => ({
        name: t.name,
        server: t.server,
        tool: t.tool,
        description: t.description,
        deferred: false,
        requiresApproval: t.requiresApproval,
        inputSchema: t.inputSchema,
      })),
    };
  },

  async 'tool.call'(p) {
    needSession(p.session);
    if (typeof p.callId !== 'string' || p.callId === '' || typeof p.tool !== 'string') {
      throw new DriverError('bad_request', 'callId and tool must be non-empty strings');
    }
    wire.startCall(p.callId, (signal) => callTool(p, signal));
    return { accepted: true };
  },

  async status() {
    const list = [...servers.values()].map((s) => s.status());
    for (const [name, bad] of invalid) {
      list.push({
        name, state: 'failed', transport: '', tools: 0, deferred: false, error: bad.error,
        source: bad.source, shared: true, refs: 0, restartAttempts: 0,
      });
    }
    return { servers: list.sort((a, b) => (a.name < b.name ? -1 : 1)) };
  },
};

wire = new Wire({
  implementation: { name: '@ai-sdk/mcp', version: VERSION },
  capabilities: ['status', 'journal-pid'],
  profiles: ['core'],
  // createMCPClient probes with server/discover at 2026-07-28 first
  // (protocolVersionDiscovery defaults to true; StdioMCPTransport and the
  // http transport set supportsProtocolVersionDiscovery) and falls back to
  // initialize at 2025-11-25 when the probe fails without a modern error
  // code (src/tool/mcp-client.ts, DefaultMCPClient.init and
  // tryProtocolDiscovery; LATEST_PROTOCOL_VERSION in src/tool/types.ts).
  eras: ['legacy', 'modern'],
  handlers,
  async onShutdown() {
    for (const s of sessions) wire.event('session.closed', { session: s });
    sessions.clear();
    await Promise.all([...servers.values()].map((s) => s.close()));
  },
});
wire.run();
