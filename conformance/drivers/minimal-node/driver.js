#!/usr/bin/env node
// The smallest useful mcplife-driver/2 driver: the MCP TypeScript SDK's
// Client behind the driver protocol, claiming the core profile on the real
// clock or a virtual one. docs/DRIVER.md section 13 builds it step by step;
// a test checks that the tutorial's code blocks are this file.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import readline from 'node:readline';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import FakeTimers from '@sinonjs/fake-timers';

console.log = console.error; // stdout carries protocol lines only
const realSetTimeout = setTimeout; // for real-time waits, whatever the clock
let clock; // the fake clock, after a start with clock "virtual" (step 8)
const t0 = performance.now();
const now = () => (clock ? clock.now : Math.floor(performance.now() - t0));
const send = (line) => process.stdout.write(JSON.stringify(line) + '\n');
let seq = 0;
function emit(kind, server, attrs, session) {
  const event = { seq: ++seq, at_ms: now(), kind };
  if (server) event.server = server;
  if (session) event.session = session;
  if (attrs) event.attrs = attrs;
  send({ type: 'event', event });
}
class Failure extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const servers = new Map(); // name -> server state
const sessions = new Set();
let options = {};
let env = {};
// expand replaces ${VAR} and ${VAR:-default} in a server's command, args
// and env values from start.env, as mcplife's configs do; an unknown
// ${VAR} stays as written.
const expand = (s) =>
  s.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}/g, (ref, name, dflt, value) =>
    dflt !== undefined ? (env[name] || value) : (env[name] ?? ref));

// tail keeps the last n UTF-16 code units of s, never half of a surrogate
// pair (a character outside the BMP, such as most emoji).
const tail = (s, n) => {
  const t = s.slice(-n);
  return /^[\uDC00-\uDFFF]/.test(t) ? t.slice(1) : t;
};

function start(params) {
  if (params.clock === 'virtual') startVirtualClock();
  options = params.options ?? {};
  env = params.env ?? process.env;
  for (const [name, def] of Object.entries(params.inline ?? {})) {
    const s = { name, def, state: 'disconnected', error: '', tools: [], stderr: '' };
    servers.set(name, s);
    if (typeof def.command !== 'string' || def.url !== undefined) {
      s.state = 'failed';
      s.error = `server ${name}: a stdio server needs a command and no url`;
      emit('config.error', name, { field: def.url !== undefined ? 'url' : 'command', message: s.error });
    } else if (def.enabled === false) {
      s.state = 'disabled';
      emit('server.disabled', name, { file: '' });
    }
  }
  return {};
}

// The SDK's StdioClientTransport signals only the child it spawned. To stop
// a server's whole process group, spawn it ourselves (detached: its own
// group) and hand the SDK's Client this small Transport.
class GroupTransport {
  constructor(s) {
    this.s = s;
    this.buffer = new ReadBuffer(); // a line longer than 10 MiB throws
  }
  async start() {
    const { args = [], env: raw = {} } = this.s.def;
    const command = expand(this.s.def.command);
    const own = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, expand(v)]));
    const allowed = { PATH: env.PATH ?? process.env.PATH, HOME: env.HOME, TMPDIR: env.TMPDIR };
    const child = spawn(command, args.map(expand), { env: { ...allowed, ...own }, stdio: 'pipe', detached: true });
    await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
    this.child = child;
    const name = this.s.name;
    emit('process.started', name, { pid: child.pid, command });
    child.stdout.on('data', (chunk) => this.read(chunk));
    child.stdout.once('close', () => this.lost()); // the process ended or closed its stdout
    child.stderr.setEncoding('utf8'); // decodes a character split between chunks whole
    child.stderr.on('data', (chunk) => (this.s.stderr = tail(this.s.stderr + chunk, 2000)));
    child.stdin.on('error', (err) => this.onerror?.(err)); // EPIPE: the server died
    child.once('exit', (code, signal) => {
      this.exited = true;
      const status = signal ? `killed by ${signal}` : `exit status ${code}`;
      emit('process.exited', name, { pid: child.pid, status, planned: Boolean(this.s.stopping) });
      // What it wrote before exiting is in the pipe already and is read in
      // this turn of the event loop; a process that left its group may
      // hold stdout open long after, so the exit ends the connection.
      setImmediate(() => this.lost());
    });
  }
  read(chunk) {
    if (this.ended) return;
    try {
      this.buffer.append(chunk);
    } catch {
      return this.lost(); // one line past the cap: the server is out of step for good
    }
    for (;;) {
      let message;
      try {
        message = this.buffer.readMessage();
      } catch {
        continue; // not JSON-RPC (a banner, a log line): the line is dropped
      }
      if (message === null) return;
      this.onmessage?.(message);
      if (message.method === 'notifications/tools/list_changed') toolsListChanged(this.s); // step 9
    }
  }
  // lost ends the connection once: the Client fails the requests in flight
  // at once, and the process, maybe still running, is stopped.
  lost() {
    if (this.ended) return;
    this.ended = true;
    this.onclose?.();
    this.close();
  }
  async send(message) {
    this.child.stdin.write(serializeMessage(message));
  }
  // close escalates: stdin closed, then SIGTERM, then SIGKILL to the group.
  close() {
    this.closing ??= this.stop();
    return this.closing;
  }
  async stop() {
    const child = this.child;
    if (!child) return;
    const gone = this.exited ? Promise.resolve() : new Promise((resolve) => child.once('exit', resolve));
    const wait = (ms) => Promise.race([gone, new Promise((r) => setTimeout(r, ms))]);
    child.stdin.end();
    await wait(2000);
    for (const signal of ['SIGTERM', 'SIGKILL']) {
      try {
        process.kill(-child.pid, signal); // the group: children die too
      } catch {
        break; // no process left in the group
      }
      await wait(2000);
    }
  }
}

const part = (p) => p.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '');
function exposedName(server, tool) {
  const s = part(server);
  const t = part(tool);
  const name = `mcp_${s}_${t.startsWith(s + '_') ? t.slice(s.length + 1) : t}`;
  if (name.length <= 64) return name;
  return `${name.slice(0, 55)}_${createHash('sha256').update(name).digest('hex').slice(0, 8)}`;
}

function exposeTools(s, listed) {
  s.tools = listed.map((t) => ({
    name: exposedName(s.name, t.name),
    server: s.name,
    tool: t.name,
    description: t.description ?? '',
    deferred: false,
    requiresApproval: s.def.requiresApproval !== false,
    inputSchema: { ...t.inputSchema, properties: t.inputSchema.properties ?? {} },
  }));
}

async function connect(s) {
  s.state = 'connecting';
  const timeout = s.def.timeout ?? 30000; // the server's connect timeout
  emit('server.connecting', s.name, { transport: 'stdio', attempt: 0, timeout_ms: timeout });
  const transport = new GroupTransport(s);
  const client = new Client({ name: 'mcplife-minimal-node', version: '0.1.0' }, { listChanged: listChanged(s) }); // step 9
  s.client = client;
  s.transport = transport;
  try {
    await client.connect(transport, { timeout });
    const listed = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout });
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    exposeTools(s, listed);
    s.state = 'connected';
    s.connectedAtMs = now();
    client.onclose = () => {
      if (s.stopping) return;
      s.state = 'failed';
      s.error = 'connection closed';
      s.tools = [];
    };
    emit('server.connected', s.name, { transport: 'stdio', attempt: 0, tools: s.tools.length, protocol: '' });
  } catch (err) {
    await new Promise((r) => realSetTimeout(r, 50)); // let the stderr pipe drain
    s.state = 'failed';
    s.error = `${err.message}; stderr: ${s.stderr.trim()}`;
    emit('server.failed', s.name, { transport: 'stdio', error: err.message, stderr: s.stderr.trim() });
    s.stopping = true;
    await transport.close();
  }
}

async function openSession({ session }) {
  if (sessions.has(session)) throw new Failure('session_exists', `session ${session} is open`);
  sessions.add(session);
  emit('session.opened', undefined, undefined, session);
  const begin = now();
  const todo = [...servers.values()].filter((s) => s.state === 'disconnected');
  await Promise.all(todo.map(connect));
  const report = { ready: [], failed: [], deferred: [], late: [], errors: {}, elapsedMs: now() - begin };
  for (const s of servers.values()) {
    if (s.state === 'connected') report.ready.push(s.name);
    if (s.state === 'failed') {
      report.failed.push(s.name);
      report.errors[s.name] = s.error;
    }
  }
  return { report };
}

function session(name) {
  if (!sessions.has(name)) throw new Failure('unknown_session', `no open session ${name}`);
}

function closeSession(p) {
  session(p.session);
  sessions.delete(p.session);
  emit('session.closed', undefined, undefined, p.session);
  return {};
}

function listTools(p) {
  session(p.session);
  return { tools: allTools().map(({ server, ...t }) => ({ ...t, server })) };
}

function allTools() {
  const tools = [...servers.values()].flatMap((s) => (s.state === 'connected' ? s.tools : []));
  return tools.sort((a, b) => (a.name < b.name ? -1 : 1));
}

function status() {
  const list = [...servers.values()].map((s) => ({
    name: s.name,
    state: s.state,
    transport: 'stdio',
    tools: s.tools.length,
    deferred: false,
    ...(s.error && { error: s.error }),
    ...(s.state !== 'connected' && s.stderr.trim() && { stderr: s.stderr.trim() }), // why it died
    ...(s.state === 'connected' && { pid: s.transport.child.pid, connectedAtMs: s.connectedAtMs }),
    source: { file: '', level: 'inline', provider: 'inline' },
    shared: true,
    refs: s.state === 'connected' ? sessions.size : 0,
    restartAttempts: 0,
  }));
  return { servers: list.sort((a, b) => (a.name < b.name ? -1 : 1)) };
}

const calls = new Map(); // callId -> {controller, done}

function startCall(p) {
  if (calls.has(p.callId)) throw new Failure('duplicate_id', `callId ${p.callId} was used before`);
  const call = { controller: new AbortController(), done: false };
  calls.set(p.callId, call);
  // The outcome is written after the {accepted: true} response.
  call.promise = new Promise((r) => setImmediate(r))
    .then(() => runCall(p, call.controller.signal))
    .then(({ result, error }) => {
      call.done = true;
      send({ type: 'call_result', callId: p.callId, result, ...(error && { error }) });
    });
  return { accepted: true };
}

async function runCall(p, signal) {
  const tool = allTools().find((t) => t.name === p.tool);
  const result = { text: '', isError: true, aborted: false, code: '', truncated: false, originalChars: 0, signals: [], server: tool?.server ?? '', tool: p.tool };
  if (!tool) {
    const message = `unknown tool ${p.tool}`;
    return { result: { ...result, text: message, code: 'unknown_tool' }, error: { code: 'unknown_tool', message } };
  }
  const s = servers.get(tool.server);
  const timeout = p.timeoutMs ?? s.def.toolTimeout ?? options.toolTimeoutMs ?? 60000;
  emit('tool.call_started', s.name, { call: p.callId, tool: p.tool }, p.session);
  let code = '';
  let message = '';
  try {
    const res = await s.client.callTool({ name: tool.tool, arguments: p.arguments ?? {} }, undefined, {
      signal,
      timeout: timeout === 0 ? 2 ** 31 - 1 : timeout,
    });
    result.text = res.content.map((c) => (c.type === 'text' ? c.text : JSON.stringify(c))).join('\n');
    result.isError = res.isError === true;
  } catch (err) {
    message = err.message;
    code = 'failed';
    if (signal.aborted) code = 'aborted';
    else if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) code = 'mcp_tool_timeout';
    else if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) code = 'mcp_connection_lost';
    if (code === 'mcp_tool_timeout') emit('tool.timeout', s.name, { call: p.callId, tool: tool.tool, timeout_ms: timeout }, p.session);
    result.code = code;
    result.aborted = code === 'aborted';
    result.text = result.aborted ? '' : `MCP error: ${message.replace(/^MCP error -?\d+: /, '')}`;
  }
  result.originalChars = result.text.length;
  const outcome = code === 'aborted' ? 'aborted' : code ? 'error' : result.isError ? 'tool_error' : 'ok';
  // The event's code is a runtime code (mcp_*) or "": `failed` and `aborted` are outcomes.
  emit('tool.call_finished', s.name, { call: p.callId, tool: p.tool, outcome, code: code.startsWith('mcp_') ? code : '' }, p.session);
  return { result, ...(code && { error: { code, message } }) };
}

function cancelCall({ callId }) {
  const call = calls.get(callId);
  if (!call) throw new Failure('unknown_id', `no call ${callId}`);
  if (!call.done) call.controller.abort('cancelled by the caller');
  return { running: !call.done };
}

let closing;
function shutdown() {
  closing ??= (async () => {
    clock?.setTickMode({ mode: 'interval', delta: 10 }); // bounded in real time
    const running = [...calls.values()].filter((c) => !c.done);
    running.forEach((c) => c.controller.abort('shutdown'));
    await Promise.all(running.map((c) => c.promise));
    for (const name of sessions) emit('session.closed', undefined, undefined, name);
    const open = [...servers.values()].filter((s) => s.transport && !s.transport.exited);
    for (const s of open) s.stopping = true;
    await Promise.all(open.map((s) => s.transport.close()));
    emit('runtime.closed');
  })();
  return closing;
}

const methods = {
  hello: () => ({
    protocol: 'mcplife-driver/2',
    implementation: { name: 'mcplife-minimal-node', version: '0.1.0' },
    capabilities: ['virtual-clock', 'status', 'journal-pid', 'list-changed'],
    profiles: ['core'],
    eras: ['legacy'], // the SDK negotiates 2025-11-25 at most
  }),
  start,
  'session.open': openSession,
  'session.close': closeSession,
  'tools.list': listTools,
  'tool.call': (p) => {
    session(p.session);
    return startCall(p);
  },
  'tool.cancel': cancelCall,
  status,
  'clock.now': () => ({ nowMs: now() }),
  'clock.advance': advance,
  'clock.pending': pending,
};

let started = false;
async function handle(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    return send({ type: 'response', id: null, error: { code: 'bad_request', message: 'not JSON' } });
  }
  const { id, method, params = {} } = req;
  if (!Number.isInteger(id)) return send({ type: 'response', id: null, error: { code: 'bad_request', message: 'no integer id' } });
  if (method === 'shutdown') {
    await shutdown();
    send({ type: 'response', id, result: {} });
    process.exit(0);
  }
  try {
    if (closing) throw new Failure('shutting_down', 'the driver is shutting down');
    if (!methods[method]) throw new Failure('unknown_method', `no method ${method}`);
    if (method === 'start' && started) throw new Failure('already_started', 'start was already called');
    if (method !== 'hello' && method !== 'start' && !started) throw new Failure('not_started', 'start first');
    const result = await methods[method](params);
    if (method === 'start') started = true;
    send({ type: 'response', id, result });
  } catch (err) {
    send({ type: 'response', id, error: { code: err.code ?? 'failed', message: String(err.message) } });
  }
}

readline.createInterface({ input: process.stdin }).on('line', (line) => line.trim() && handle(line));
process.stdin.on('end', () => shutdown().then(() => process.exit(0)));

// Step 8: the virtual clock. The SDK arms its request timeouts with the
// global setTimeout, and so do the stop graces above: fake those four
// functions and nothing else, and only waiting becomes virtual.
function startVirtualClock() {
  clock = FakeTimers.install({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
}
function virtual() {
  if (!clock) throw new Failure('unsupported', 'the driver was started with clock "real"');
  return clock;
}
async function advance({ ms }) {
  if (!Number.isInteger(ms) || ms < 0) throw new Failure('bad_request', 'ms must be a non-negative integer');
  await virtual().tickAsync(ms); // fires the timers it passes, in deadline order
  return { nowMs: now() };
}
function pending() {
  const timers = virtual().timers?.values() ?? []; // none before the first timer
  const left = [...timers].map((t) => Math.ceil(t.callAt - clock.now));
  return { timersMs: left.sort((a, b) => a - b) };
}

// Step 9: list changes. The SDK lists the tools again once its debounce
// passes and hands them to onChanged; the transport (step 3) tells when
// each notification arrived, so the events can announce the debounce.
const debounceMs = 300; // the SDK's default, passed explicitly
function listChanged(s) {
  const onChanged = (err, listed) => {
    s.changes = 0; // the debounce window is over
    if (err || !listed || s.state !== 'connected') return;
    exposeTools(s, listed);
    const names = s.tools.map((t) => t.name).sort().join(',');
    for (const name of sessions) emit('tools.registered', s.name, { tools: s.tools.length, deferred: false, names }, name);
  };
  return { tools: { debounceMs, onChanged } };
}
// The SDK arms its debounce in a promise job, and only for a server that
// advertised tools.listChanged; setImmediate runs after that job, so the
// events come after the timer they announce (section 8).
function toolsListChanged(s) {
  if (!s.client.getServerCapabilities()?.tools?.listChanged) return;
  const n = (s.changes = (s.changes ?? 0) + 1);
  if (n <= 10) setImmediate(() => emit('tools.changed', s.name, { debounce_ms: debounceMs }));
  else if (/^10+$/.test(String(n))) setImmediate(() => emit('tools.change_flood', s.name, { notifications: n, debounce_ms: debounceMs }));
}
