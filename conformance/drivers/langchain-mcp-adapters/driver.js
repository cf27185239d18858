#!/usr/bin/env node
// driver.js: an mcplife-driver/3 driver (docs/DRIVER.md) for LangChain's
// MCP adapters: one MultiServerMCPClient (@langchain/mcp-adapters) holds
// every configured server, and tools are the LangChain tools it loads,
// called with tool.invoke(args, {signal, timeout}) as an agent would.
//
// The driver maps the server configuration onto the library's own options
// (restart / reconnect, defaultToolTimeout, onConnectionError) and reports
// what the library does; it adds no lifecycle behaviour of its own. See
// README.md for what it claims and why.

import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import FakeTimers from '@sinonjs/fake-timers';

import { Wire, DriverError } from '../common/wire.js';
import { sleepReal } from '../common/clock.js';
import { toolName, flattenContent, packageVersion } from '../common/host.js';

const here = new URL('./', import.meta.url);
const VERSION = packageVersion(here, '@langchain/mcp-adapters');

// The library's reconnect loop uses one fixed delay; these are the delays
// the driver hands it for the configured policies.
const DEFAULT_DELAY_MS = 1000;
const BOUNDED = { maxAttempts: 3, delayMs: 2000 };
// How long shutdown waits (real time) for connections still being made.
const SHUTDOWN_CONNECT_WAIT_MS = 5000;

let wire;
let client = null; // the MultiServerMCPClient
let configError = ''; // why the library refused the whole configuration
let options = {};
const defs = new Map(); // name -> {server object, source, enabled}
const failed = new Map(); // name -> error message (onConnectionError)
const seen = new Map(); // name -> {pid, tools (array identity), connectedAtMs, client}
const sessions = new Set();
let serverTools = {}; // the library's live server name -> tools map
let initializing = null;

/** libraryServer maps one server object onto the library's connection config. */
function libraryServer(s) {
  const out = {};
  for (const k of ['type', 'transport', 'command', 'args', 'env', 'url', 'headers', 'cwd']) {
    if (s[k] !== undefined) out[k] = s[k];
  }
  if (out.command !== undefined && out.args === undefined) out.args = [];
  const isStdio = out.command !== undefined && out.url === undefined;
  let policy;
  if (s.restart === 'never') policy = { enabled: false };
  else if (Array.isArray(s.restartDelays) && s.restartDelays.length > 0) {
    policy = { enabled: true, maxAttempts: s.restartDelays.length, delayMs: s.restartDelays[0] };
  } else if (s.restart === 'bounded') policy = { enabled: true, ...BOUNDED };
  else policy = { enabled: true, delayMs: DEFAULT_DELAY_MS }; // the library's default of 3 attempts
  if (isStdio) out.restart = policy;
  else if (out.type === 'sse' || out.transport === 'sse') out.reconnect = policy;
  return out;
}

function attachHooks(name, c) {
  const pid = c.transport?.pid ?? 0;
  const tools = serverTools[name];
  const entry = { pid, tools, connectedAtMs: wire.now(), client: c };
  seen.set(name, entry);
  if (pid) wire.event('process.started', { server: name, attrs: { pid, command: defs.get(name).s.command ?? '' } });
  wire.event('server.connected', {
    server: name,
    attrs: { transport: defs.get(name).transport, attempt: 0, tools: tools?.length ?? 0, protocol: c.transport?.protocolVersion ?? '' },
  });
  // client.onclose is free: the library hooks the transport, not the client.
  c.onclose = () => {
    // The exit status stays inside the SDK's transport: omitted, not invented.
    if (pid) wire.event('process.exited', { server: name, attrs: { pid, planned: Boolean(wire.closing) } });
    if (!wire.closing) wire.event('transport.closed', { server: name, attrs: { transport: defs.get(name).transport, error: 'connection closed' } });
  };
}

/** connectAll runs the library's initializeConnections once and records the outcome. */
function connectAll() {
  if (!initializing) {
    initializing = (async () => {
      if (!client) return;
      serverTools = await client.initializeConnections();
      for (const name of Object.keys(serverTools)) {
        if (seen.has(name)) continue;
        attachHooks(name, await client.getClient(name));
      }
      for (const [name, error] of failed) {
        wire.event('server.failed', { server: name, attrs: { transport: defs.get(name)?.transport ?? '', error, stderr: '' } });
      }
    })();
  }
  return initializing;
}

function connected(name) {
  const e = seen.get(name);
  return Boolean(e && serverTools[name] && serverTools[name] === e.tools);
}

/** libraryTools lists {name, server, tool, lc} for every loaded LangChain tool, in the library's order. */
function libraryTools() {
  const out = [];
  for (const [server, tools] of Object.entries(serverTools)) {
    const prefix = `mcp__${server}__`;
    for (const lc of tools) {
      const raw = lc.name.startsWith(prefix) ? lc.name.slice(prefix.length) : lc.name;
      out.push({ name: lc.name, server, tool: raw, lc });
    }
  }
  return out;
}

function findTool(name) {
  const all = libraryTools();
  // The library's own name first; the suite's mcp_<server>_<tool> name is
  // accepted as an alias so that calls are judged apart from naming.
  return all.find((t) => t.name === name) ?? all.find((t) => toolName(t.server, t.tool) === name);
}

function classify(err, signal) {
  if (signal.aborted) return 'aborted';
  const m = String(err?.message ?? err);
  if (/TimeoutError|timed out|-32001/.test(m)) return 'mcp_tool_timeout';
  if (/Connection closed|-32000/.test(m)) return 'mcp_connection_lost';
  return 'failed';
}

async function callTool(p, signal) {
  const base = { isError: true, aborted: false, code: '', truncated: false, originalChars: 0, signals: [], server: '', tool: p.tool };
  const t = findTool(p.tool);
  if (!t) {
    const message = `no tool ${JSON.stringify(p.tool)} in session ${JSON.stringify(p.session)}`;
    return { result: { ...base, text: message, originalChars: message.length, code: 'unknown_tool' }, error: { code: 'unknown_tool', message } };
  }
  const call = `${p.session}-${p.callId}`;
  wire.event('tool.call_started', { server: t.server, session: p.session, attrs: { call, tool: t.name } });
  const finish = (outcome, code) => wire.event('tool.call_finished', { server: t.server, session: p.session, attrs: { call, tool: t.name, outcome, code } });
  const config = { signal };
  if (p.timeoutMs !== undefined && p.timeoutMs > 0) config.timeout = p.timeoutMs;
  try {
    const out = await t.lc.invoke(p.arguments ?? {}, config);
    const text = flattenContent(typeof out === 'string' ? out : out?.content ?? out);
    finish('ok', '');
    return { result: { ...base, text, isError: false, originalChars: text.length, server: t.server, tool: t.name } };
  } catch (err) {
    const code = classify(err, signal);
    const message = String(err?.message ?? err);
    if (code === 'aborted') {
      finish('aborted', '');
      return { result: { ...base, text: '', aborted: true, code, server: t.server, tool: t.name }, error: { code, message } };
    }
    if (code === 'mcp_tool_timeout') {
      wire.event('tool.timeout', { server: t.server, session: p.session, attrs: { call, tool: t.name, timeout_ms: p.timeoutMs ?? options.toolTimeoutMs ?? 0 } });
    }
    // The library throws a ToolException for a failed call and for a result
    // the server marked isError alike; the agent sees its message.
    finish('error', code.startsWith('mcp_') ? code : ''); // the event carries runtime codes only
    return { result: { ...base, text: message, code, originalChars: message.length, server: t.server, tool: t.name }, error: { code, message } };
  }
}

const handlers = {
  async start(p) {
    options = p.options ?? {};
    const entries = [];
    for (const [name, s] of Object.entries(p.inline ?? {})) entries.push([name, s, { file: '', level: 'inline', provider: 'inline' }]);
    const mcpServers = {};
    for (const [name, s, source] of entries) {
      const transport = s.type ?? (s.url !== undefined && s.command === undefined ? 'http' : 'stdio');
      defs.set(name, { s, source, transport, enabled: s.enabled !== false });
      // The library has no "enabled" switch: a host leaves such servers out.
      if (s.enabled === false) {
        wire.event('server.disabled', { server: name, attrs: { file: source.file } });
        continue;
      }
      mcpServers[name] = libraryServer(s);
    }
    if (Object.keys(mcpServers).length === 0) return {};
    const cfg = {
      mcpServers,
      prefixToolNameWithServerName: true,
      additionalToolNamePrefix: 'mcp',
      // The library's list_changed hook only notifies: its loaded tools stay as they were.
      onToolsListChanged: ({ server }) => {
        wire.event('tools.changed', { server, attrs: { debounce_ms: 0 } });
      },
      onConnectionError: ({ serverName, error }) => {
        failed.set(serverName, String(error?.message ?? error));
      },
    };
    if (options.toolTimeoutMs) cfg.defaultToolTimeout = options.toolTimeoutMs;
    try {
      client = new MultiServerMCPClient(cfg);
    } catch (err) {
      // The library validates the whole configuration at once: one bad
      // server refuses them all.
      configError = String(err?.message ?? err).replace(/\s+/g, ' ').slice(0, 500);
      const paths = new Set();
      for (const m of configError.matchAll(/"path":\s*\[\s*"mcpServers",\s*"([^"]+)",\s*"([^"]*)"/g)) paths.add(`${m[1]}\u0000${m[2]}`);
      for (const key of paths) {
        const [server, field] = key.split('\u0000');
        wire.event('config.error', { server, attrs: { file: '', field, message: configError } });
      }
    }
    return {};
  },

  async 'session.open'(p) {
    if (typeof p.session !== 'string' || p.session === '') throw new DriverError('bad_request', 'session must be a non-empty string');
    if (sessions.has(p.session)) throw new DriverError('session_exists', `session ${JSON.stringify(p.session)} is open`);
    sessions.add(p.session);
    const t0 = wire.now();
    wire.event('session.opened', { session: p.session });
    await connectAll();
    const report = { ready: [], failed: [], deferred: [], late: [], errors: {}, elapsedMs: 0 };
    for (const [name, d] of defs) {
      if (!d.enabled) continue;
      if (connected(name)) {
        report.ready.push(name);
        wire.event('tools.registered', { server: name, session: p.session, attrs: { tools: serverTools[name].length, deferred: false, names: serverTools[name].map((t) => t.name).join(',') } });
      } else {
        report.failed.push(name);
        report.errors[name] = failed.get(name) ?? (configError || 'not connected');
      }
    }
    report.elapsedMs = wire.now() - t0;
    return { report };
  },

  async 'session.close'(p) {
    if (!sessions.has(p.session)) throw new DriverError('unknown_session', `no open session ${JSON.stringify(p.session)}`);
    sessions.delete(p.session);
    wire.event('session.closed', { session: p.session });
    return {};
  },

  async 'tools.list'(p) {
    if (!sessions.has(p.session)) throw new DriverError('unknown_session', `no open session ${JSON.stringify(p.session)}`);
    return {
      tools: libraryTools().map((t) => {
        const schema = t.lc.schema && typeof t.lc.schema === 'object' && !('_def' in t.lc.schema) ? t.lc.schema : { type: 'object' };
        return {
          name: t.name,
          server: t.server,
          tool: t.tool,
          description: t.lc.description ?? '',
          deferred: false,
          // LangChain tools carry no approval flag: nothing asks before a call.
          requiresApproval: false,
          inputSchema: schema,
        };
      }),
    };
  },

  async 'tool.call'(p) {
    if (!sessions.has(p.session)) throw new DriverError('unknown_session', `no open session ${JSON.stringify(p.session)}`);
    wire.startCall(p.callId, (signal) => callTool(p, signal));
    return { accepted: true };
  },

  async status() {
    const list = [];
    for (const [name, d] of defs) {
      const st = {
        name,
        state: 'disconnected',
        transport: d.transport,
        tools: 0,
        deferred: false,
        source: d.source,
        shared: true,
        refs: 0,
        restartAttempts: 0,
      };
      if (!d.enabled) st.state = 'disabled';
      else if (connected(name)) {
        const e = seen.get(name);
        st.state = 'connected';
        st.tools = serverTools[name].length;
        st.connectedAtMs = e.connectedAtMs;
        st.refs = sessions.size;
        if (e.pid) st.pid = e.pid;
      } else if (failed.has(name) || configError) {
        st.state = 'failed';
        st.error = failed.get(name) ?? configError;
      } else if (seen.has(name)) {
        st.state = 'restarting';
      }
      list.push(st);
    }
    return { servers: list.sort((a, b) => (a.name < b.name ? -1 : 1)) };
  },
};

wire = new Wire({
  implementation: { name: '@langchain/mcp-adapters', version: VERSION },
  capabilities: ['status', 'journal-pid'],
  profiles: ['core'],
  // The SDK under the library negotiates 2025-11-25 at most
  // (@modelcontextprotocol/sdk's LATEST_PROTOCOL_VERSION, types.js): legacy only.
  eras: ['legacy'],
  handlers,
  // virtual-clock: the library's timers are global setTimeout timers (the
  // restart loop's delay, MultiServerMCPClient._attemptReconnect in
  // dist/client.js; the tool timeout, AbortSignal.timeout in @langchain/core's
  // ensureConfig, rebuilt on setTimeout by common/timers.js), and so are the
  // SDK's under it (request timeouts, the stdio stop grace).
  fakeTimers: FakeTimers,
  async onShutdown() {
    for (const s of sessions) wire.event('session.closed', { session: s });
    sessions.clear();
    // A server still in its handshake holds initializeConnections until the
    // SDK's request timeout: shutdown is bounded in real time, so wait a
    // few seconds at most, then close what the library has connected.
    if (initializing) await Promise.race([initializing.catch(() => {}), sleepReal(SHUTDOWN_CONNECT_WAIT_MS)]);
    if (client) {
      for (const [name, e] of seen) if (e.pid && connected(name)) wire.event('process.signaled', { server: name, attrs: { pid: e.pid, step: 'stdin-closed' } });
      await client.close().catch((err) => console.error('close:', err?.message ?? err));
    }
  },
});
wire.run();
