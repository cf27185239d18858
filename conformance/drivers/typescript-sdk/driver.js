#!/usr/bin/env node
// driver.js: an mcplife-driver/3 driver (docs/DRIVER.md) for the official
// MCP TypeScript SDK. It is the small host a host author writes around
// @modelcontextprotocol/sdk: one Client per configured server (stdio,
// streamable HTTP or SSE transport), tools exposed as mcp_<server>_<tool>,
// calls with the SDK's per-request timeout and AbortSignal, and a restart
// policy built on client.onclose. Processes, handshakes, timeouts,
// cancellation and closing are the SDK's own; see README.md for what it
// claims and why.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import FakeTimers from '@sinonjs/fake-timers';

import { Wire, DriverError } from '../common/wire.js';
import { sleepReal } from '../common/clock.js';
import { loadConfig, toolName, agentSchema, flattenContent, Tail, packageVersion } from '../common/host.js';

const SDK_VERSION = packageVersion(new URL('./', import.meta.url), '@modelcontextprotocol/sdk');

const CONNECT_TIMEOUT_MS = 30000;
// The SDK's own default request timeout (DEFAULT_REQUEST_TIMEOUT_MSEC).
const SDK_DEFAULT_TIMEOUT_MS = 60000;
// What a typical host does on an unexpected close: a few reconnects with a
// growing delay, then give up.
const DEFAULT_RESTART_DELAYS = [1000, 2000, 4000];
// setTimeout's largest delay: "no timeout".
const NO_TIMEOUT_MS = 2 ** 31 - 1;

let wire;
let options = {};
const servers = new Map(); // name -> Server
const invalid = new Map(); // name -> {error, source}
const sessions = new Map(); // name -> {}

/** Server is one configured server and its SDK client. */
class Server {
  constructor(def) {
    this.def = def;
    this.state = def.enabled ? 'disconnected' : 'disabled';
    this.client = null;
    this.transport = null;
    this.tools = []; // [{name, tool, description, inputSchema}]
    this.error = '';
    this.stderr = new Tail();
    this.pid = 0;
    this.connectedAtMs = undefined;
    this.restartAttempts = 0;
    this.connecting = null;
    this.stopping = false;
    this.closed = false;
    this.restartTimer = null;
    // The SDK's per-request timeout where the configuration names one: the
    // server's "timeout" bounds each request of the connect (initialize,
    // then each tools/list page), its "toolTimeout" each tool call (0:
    // none), above options.toolTimeoutMs.
    const raw = def.raw ?? {};
    this.connectTimeout = Number.isInteger(raw.timeout) && raw.timeout > 0 ? raw.timeout : CONNECT_TIMEOUT_MS;
    this.toolTimeout = Number.isInteger(raw.toolTimeout) && raw.toolTimeout >= 0 ? raw.toolTimeout : undefined;
  }

  get name() {
    return this.def.name;
  }

  policy() {
    if (this.def.restart === 'never') return 'never';
    return 'bounded'; // a few delays from client.onclose, then failed
  }

  delays() {
    return this.def.restartDelays ?? DEFAULT_RESTART_DELAYS;
  }

  newTransport() {
    const d = this.def;
    if (d.transport === 'stdio') {
      // The SDK spawns the command itself and passes it its own default
      // environment (HOME, LOGNAME, PATH, SHELL, TERM, USER) plus env.
      const t = new StdioClientTransport({ command: d.command, args: d.args, env: d.env, stderr: 'pipe' });
      t.stderr?.on('data', (chunk) => this.stderr.push(chunk));
      // Announce the process once the SDK spawned it (its pid is public).
      const start = t.start.bind(t);
      t.start = async () => {
        await start();
        this.pid = t.pid ?? 0;
        wire.event('process.started', { server: this.name, attrs: { pid: this.pid, command: d.command } });
        // The exit status is only on the ChildProcess the SDK keeps private.
        const pid = this.pid;
        t._process?.once('exit', (code, signal) => {
          wire.event('process.exited', {
            server: this.name,
            attrs: { pid, status: signal ? `killed by ${signal}` : `exit status ${code}`, planned: this.stopping || this.closed },
          });
        });
      };
      return t;
    }
    const requestInit = { headers: d.headers };
    if (d.transport === 'sse') return new SSEClientTransport(new URL(d.url), { requestInit });
    return new StreamableHTTPClientTransport(new URL(d.url), { requestInit });
  }

  /** connect runs one connect attempt: initialize, then every tools/list page. */
  connect(attempt = 0) {
    if (this.connecting) return this.connecting;
    this.connecting = (async () => {
      const d = this.def;
      this.state = attempt > 0 ? 'restarting' : 'connecting';
      this.stderr = new Tail();
      this.pid = 0;
      wire.event('server.connecting', { server: this.name, attrs: { transport: d.transport, attempt, timeout_ms: this.connectTimeout } });
      // The SDK's own list_changed support: after its debounce it lists the
      // tools again (one page) and hands them over.
      const client = new Client(
        { name: 'mcplife-driver-typescript-sdk', version: '0.1.0' },
        { capabilities: {}, listChanged: { tools: { onChanged: (err, tools) => this.onToolsChanged(client, err, tools) } } },
      );
      const transport = this.newTransport();
      this.client = client;
      this.transport = transport;
      this.stopping = false;
      let connected = false;
      client.onclose = () => {
        if (this.client !== client) return;
        if (connected && !this.stopping && !this.closed) this.onUnexpectedClose();
      };
      client.onerror = (err) => console.error(`[${this.name}] ${err?.message ?? err}`);
      try {
        await client.connect(transport, { timeout: this.connectTimeout });
        const tools = [];
        let cursor;
        do {
          const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.connectTimeout });
          tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor);
        connected = true;
        this.tools = this.exposed(tools);
        this.state = 'connected';
        this.error = '';
        this.connectedAtMs = wire.now();
        wire.event('server.connected', {
          server: this.name,
          attrs: { transport: d.transport, attempt, tools: this.tools.length, protocol: transport.protocolVersion ?? '' },
        });
        for (const s of sessions.keys()) this.announceTools(s);
        return true;
      } catch (err) {
        // stderr arrives on its own stream: give it a moment (of real time,
        // whatever the clock) to drain.
        await sleepReal(20);
        const tail = this.stderr.toString();
        this.error = String(err?.message ?? err) + (tail ? `; stderr: ${tail}` : '');
        this.state = 'failed';
        wire.event('server.failed', { server: this.name, attrs: { transport: d.transport, error: String(err?.message ?? err), stderr: tail } });
        this.stopping = true;
        await client.close().catch(() => {});
        return false;
      } finally {
        this.connecting = null;
      }
    })();
    return this.connecting;
  }

  exposed(tools) {
    return tools.map((t) => ({
      name: toolName(this.name, t.name),
      tool: t.name,
      description: t.description ?? '',
      inputSchema: agentSchema(t.inputSchema),
    }));
  }

  onToolsChanged(client, err, tools) {
    if (client !== this.client || this.state !== 'connected') return;
    wire.event('tools.changed', { server: this.name, attrs: { debounce_ms: 0 } });
    if (err || !tools) {
      console.error(`[${this.name}] tools refresh: ${err?.message ?? 'no tools'}`);
      return;
    }
    this.tools = this.exposed(tools);
    for (const s of sessions.keys()) this.announceTools(s);
  }

  announceTools(session) {
    if (this.state !== 'connected') return;
    wire.event('tools.registered', {
      server: this.name,
      session,
      attrs: { tools: this.tools.length, deferred: false, names: this.tools.map((t) => t.name).join(',') },
    });
  }

  /** onUnexpectedClose is the host's restart policy, hung on client.onclose. */
  onUnexpectedClose() {
    const error = this.stderr.toString();
    wire.event('transport.closed', { server: this.name, attrs: { transport: this.def.transport, error: 'connection closed' } });
    for (const s of sessions.keys()) {
      wire.event('tools.unregistered', { server: this.name, session: s, attrs: { tools: this.tools.length, reason: 'connection lost' } });
    }
    this.tools = [];
    this.connectedAtMs = undefined;
    this.error = 'connection closed' + (error ? `; stderr: ${error}` : '');
    this.scheduleRestart();
  }

  scheduleRestart() {
    const delays = this.delays();
    if (this.policy() === 'never' || this.restartAttempts >= delays.length) {
      this.state = 'failed';
      wire.event('restart.gave_up', { server: this.name, attrs: { attempts: this.restartAttempts, policy: this.policy() } });
      return;
    }
    const attempt = ++this.restartAttempts;
    const delay = delays[attempt - 1];
    this.state = 'restarting';
    this.restartTimer = setTimeout(async () => {
      this.restartTimer = null;
      if (this.closed) return;
      wire.event('restart.attempt', { server: this.name, attrs: { reason: 'transport-exit', attempt } });
      if (await this.connect(attempt)) {
        wire.event('restart.succeeded', { server: this.name, attrs: { reason: 'transport-exit', attempt } });
      } else if (!this.closed) {
        const next = this.delays()[attempt];
        wire.event('restart.failed', {
          server: this.name,
          attrs: { reason: 'transport-exit', attempt, error: this.error, next_delay_ms: next ?? 0 },
        });
        this.scheduleRestart();
      }
    }, delay);
    wire.event('restart.scheduled', { server: this.name, attrs: { reason: 'transport-exit', attempt, delay_ms: delay, policy: this.policy() } });
  }

  /** close stops the server the SDK's way (stdin closed, SIGTERM, SIGKILL to the child). */
  async close() {
    this.closed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.connecting) await this.connecting.catch(() => {});
    if (!this.client) return;
    this.stopping = true;
    if (this.pid) wire.event('process.signaled', { server: this.name, attrs: { pid: this.pid, step: 'stdin-closed' } });
    await this.client.close().catch((err) => console.error(`[${this.name}] close: ${err?.message ?? err}`));
    this.client = null;
  }

  status() {
    const st = {
      name: this.name,
      state: this.state,
      transport: this.def.transport,
      tools: this.tools.length,
      deferred: false,
      source: this.def.source,
      shared: true,
      refs: this.state === 'connected' ? sessions.size : 0,
      restartAttempts: this.restartAttempts,
      policy: this.policy(),
    };
    if (this.error) st.error = this.error;
    const tail = this.stderr.toString();
    if (tail) st.stderr = tail;
    if (this.connectedAtMs !== undefined) st.connectedAtMs = this.connectedAtMs;
    if (this.pid && this.state === 'connected') st.pid = this.pid;
    return st;
  }
}

function sessionTools() {
  const out = [];
  for (const s of servers.values()) {
    if (s.state !== 'connected') continue;
    for (const t of s.tools) out.push({ ...t, server: s.name, requiresApproval: s.def.requiresApproval });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function needSession(name) {
  if (!sessions.has(name)) throw new DriverError('unknown_session', `no open session ${JSON.stringify(name)}`);
}

/** classify maps what the SDK threw to a call outcome code. */
function classify(err, signal) {
  if (signal.aborted) return 'aborted';
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout) return 'mcp_tool_timeout';
    if (err.code === ErrorCode.ConnectionClosed) return 'mcp_connection_lost';
  }
  return 'failed';
}

async function callTool(p, signal) {
  const base = { isError: true, aborted: false, code: '', truncated: false, originalChars: 0, signals: [], server: '', tool: p.tool };
  const t = sessionTools().find((x) => x.name === p.tool);
  if (!t) {
    const message = `no tool ${JSON.stringify(p.tool)} in session ${JSON.stringify(p.session)}`;
    return { result: { ...base, text: message, originalChars: message.length, code: 'unknown_tool' }, error: { code: 'unknown_tool', message } };
  }
  const srv = servers.get(t.server);
  const call = `${p.session}-${p.callId}`;
  const timeout = p.timeoutMs ?? srv.toolTimeout ?? options.toolTimeoutMs ?? SDK_DEFAULT_TIMEOUT_MS;
  wire.event('tool.call_started', { server: srv.name, session: p.session, attrs: { call, tool: t.name } });
  const finish = (outcome, code) =>
    wire.event('tool.call_finished', { server: srv.name, session: p.session, attrs: { call, tool: t.name, outcome, code } });
  try {
    const res = await srv.client.callTool({ name: t.tool, arguments: p.arguments ?? {} }, undefined, {
      signal,
      timeout: timeout === 0 ? NO_TIMEOUT_MS : timeout,
    });
    const text = flattenContent(res.content);
    const isError = res.isError === true;
    finish(isError ? 'tool_error' : 'ok', '');
    return { result: { ...base, text, isError, originalChars: text.length, server: srv.name, tool: t.name } };
  } catch (err) {
    const code = classify(err, signal);
    const message = String(err?.message ?? err);
    if (code === 'mcp_tool_timeout') {
      wire.event('tool.timeout', { server: srv.name, session: p.session, attrs: { call, tool: t.name, timeout_ms: timeout } });
    }
    if (code === 'aborted') {
      finish('aborted', '');
      return {
        result: { ...base, text: '', aborted: true, code: 'aborted', server: srv.name, tool: t.name },
        error: { code: 'aborted', message },
      };
    }
    // What the agent sees is the SDK's error message.
    finish('error', code.startsWith('mcp_') ? code : ''); // the event carries runtime codes only
    return {
      result: { ...base, text: message, code, originalChars: message.length, server: srv.name, tool: t.name },
      error: { code, message },
    };
  }
}

const handlers = {
  async start(p) {
    options = p.options ?? {};
    const cfg = loadConfig(p, (kind, e) => wire.event(kind, e), { fields: ['toolTimeout'] });
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
    sessions.set(p.session, {});
    const t0 = wire.now();
    wire.event('session.opened', { session: p.session });
    const enabled = [...servers.values()].filter((s) => s.def.enabled);
    await Promise.all(
      enabled.map(async (s) => {
        if (s.state === 'connected') s.announceTools(p.session);
        else if (s.state !== 'failed' || s.connecting) await s.connect();
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
  implementation: { name: '@modelcontextprotocol/sdk', version: SDK_VERSION },
  capabilities: ['status', 'journal-pid'],
  profiles: ['core'],
  // The SDK negotiates 2025-11-25 at most (LATEST_PROTOCOL_VERSION and
  // SUPPORTED_PROTOCOL_VERSIONS in its types.js): legacy only.
  eras: ['legacy'],
  handlers,
  // virtual-clock: the SDK's timers (Protocol request timeouts, the stdio
  // stop grace, the list_changed debounce, the streamable HTTP reconnection
  // delay) and the driver's restart backoff are global setTimeout timers.
  fakeTimers: FakeTimers,
  async onShutdown() {
    for (const s of sessions.keys()) wire.event('session.closed', { session: s });
    sessions.clear();
    await Promise.all([...servers.values()].map((s) => s.close()));
  },
});
wire.run();
