// host.js: what a host author writes around any MCP client library, shared by
// the Node drivers: reading the server configuration the driver's start
// carries, validating it per server, the exposed tool names, the schema
// handed to the agent, and flattening MCP content to text.
//
// None of it is MCP-client behaviour under test; the lifecycle (processes,
// connections, timeouts, restarts) is left to the library each driver wraps.

import fs from 'node:fs';
import crypto from 'node:crypto';

const MAX_TOOL_NAME = 64;

function sanitizePart(p, fallback) {
  let out = '';
  for (const ch of String(p).toLowerCase()) {
    if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) out += ch;
    else if (out.length > 0 && !out.endsWith('_')) out += '_';
  }
  out = out.replace(/_+$/, '');
  return out === '' ? fallback : out;
}

/**
 * toolName is the exposed name of tool on server (docs/DRIVER.md, the
 * naming rules of the reference): mcp_<server>_<tool>, each part lower-cased
 * with runs of other characters than [a-z0-9] collapsed to one "_", a
 * redundant "<server>_" prefix of the tool stripped once, capped at 64
 * characters with a hash suffix.
 */
export function toolName(server, tool) {
  const s = sanitizePart(server, 'server');
  let t = sanitizePart(tool, 'tool');
  if (t.startsWith(s + '_') && t.length > s.length + 1) t = t.slice(s.length + 1);
  const name = `mcp_${s}_${t}`;
  if (name.length <= MAX_TOOL_NAME) return name;
  const sum = crypto.createHash('sha256').update(name).digest('hex').slice(0, 8);
  return name.slice(0, MAX_TOOL_NAME - 9) + '_' + sum;
}

/** agentSchema is the input schema handed to the agent: an object schema with properties. */
export function agentSchema(schema) {
  const s = schema && typeof schema === 'object' ? { ...schema } : { type: 'object' };
  if (s.type === undefined) s.type = 'object';
  if (s.type === 'object' && s.properties === undefined) s.properties = {};
  return s;
}

/** flattenContent joins the text of MCP content blocks the way a chat host shows them. */
export function flattenContent(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined ? '' : JSON.stringify(content);
  return content
    .map((c) => {
      if (c?.type === 'text') return c.text;
      if (c?.type === 'resource' && c.resource?.text !== undefined) return c.resource.text;
      return JSON.stringify(c);
    })
    .join('\n');
}

/**
 * Tail keeps the last max bytes a server wrote to stderr, as bytes: a flood
 * costs a copy, not a UTF-8 decode per chunk, and a character split between
 * chunks or by the cut is decoded whole or dropped, never turned into U+FFFD.
 */
export class Tail {
  constructor(max = 4096) {
    this.max = max;
    this.bytes = Buffer.alloc(0);
    this.cut = false; // older bytes were dropped
  }
  push(chunk) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    const all = this.bytes.length === 0 ? b : Buffer.concat([this.bytes, b]);
    if (all.length > this.max) {
      this.cut = true;
      this.bytes = Buffer.from(all.subarray(all.length - this.max));
    } else {
      this.bytes = all === b ? Buffer.from(b) : all;
    }
  }
  toString() {
    let start = 0;
    // A cut tail may begin inside a character: skip its continuation bytes.
    while (this.cut && start < 3 && start < this.bytes.length && (this.bytes[start] & 0xc0) === 0x80) start++;
    return this.bytes.subarray(start).toString('utf8').trim();
  }
}

const SERVER_FIELDS = new Set([
  'type', 'command', 'args', 'env', 'url', 'headers', 'enabled', 'shared', 'restart', 'restartDelays',
  'requiresApproval', 'timeout', 'cwd',
]);

/**
 * validate checks one server object and returns {def} or {field, message}.
 * def: {name, transport, command, args, env, url, headers, enabled,
 * restart, restartDelays, requiresApproval, source, raw}.
 */
/**
 * expandVars replaces ${VAR} and ${VAR:-default} in s with lookup(VAR), as
 * mcplife's configs do (runtime/config Expand): :-default applies when VAR
 * is unset or empty; an unknown ${VAR} stays as written; the result is not
 * expanded again.
 */
export function expandVars(s, lookup) {
  return s.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}/g, (ref, name, dflt, value) => {
    const v = lookup(name);
    if (dflt !== undefined) return v === undefined || v === '' ? value : v;
    return v === undefined ? ref : v;
  });
}

// expandServer expands ${VAR} in a valid server's command, args and env
// values from the start request's environment; its url and header values
// too, but for a project-level file only from the server's own env block,
// so that a cloned repository cannot send the user's variables to a server
// of its choosing (as mcplife's runtime does).
function expandServer(def, env) {
  const proc = (k) => env[k];
  const own = def.env;
  const net = def.source.level === 'project' ? (k) => own[k] : proc;
  const map = (o, lookup) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, expandVars(v, lookup)]));
  return {
    ...def,
    command: def.command === undefined ? undefined : expandVars(def.command, proc),
    args: def.args.map((a) => expandVars(a, proc)),
    env: map(def.env, proc),
    url: def.url === undefined ? undefined : expandVars(def.url, net),
    headers: map(def.headers, net),
  };
}

function validate(name, s, source, known = SERVER_FIELDS) {
  const bad = (field, message) => ({ field, message: `server ${JSON.stringify(name)}: ${field}: ${message}` });
  if (typeof s !== 'object' || s === null || Array.isArray(s)) return bad('', 'a server must be a JSON object');
  const hasCommand = s.command !== undefined;
  const hasURL = s.url !== undefined;
  if (hasCommand && hasURL) return bad('url', 'command and url are mutually exclusive');
  if (!hasCommand && !hasURL) return bad('command', 'a server needs a command (stdio) or a url (http, sse)');
  let transport = s.type ?? (hasCommand ? 'stdio' : 'http');
  if (transport === 'streamable-http' || transport === 'streamableHttp') transport = 'http';
  if (!['stdio', 'http', 'sse'].includes(transport)) return bad('type', `unknown transport ${JSON.stringify(s.type)}`);
  if (transport === 'stdio' && (typeof s.command !== 'string' || s.command === '')) return bad('command', 'must be a non-empty string');
  if (transport !== 'stdio' && (typeof s.url !== 'string' || s.url === '')) return bad('url', 'must be a non-empty string');
  if (s.args !== undefined && !(Array.isArray(s.args) && s.args.every((a) => typeof a === 'string'))) return bad('args', 'must be a list of strings');
  for (const f of ['env', 'headers']) {
    if (s[f] !== undefined && (typeof s[f] !== 'object' || s[f] === null || Object.values(s[f]).some((v) => typeof v !== 'string'))) {
      return bad(f, 'must be an object of strings');
    }
  }
  for (const f of ['enabled', 'shared', 'requiresApproval']) {
    if (s[f] !== undefined && typeof s[f] !== 'boolean') return bad(f, 'must be true or false');
  }
  if (s.restartDelays !== undefined && !(Array.isArray(s.restartDelays) && s.restartDelays.every((d) => Number.isInteger(d) && d >= 0))) {
    return bad('restartDelays', 'must be a list of non-negative integers (ms)');
  }
  return {
    def: {
      name,
      transport,
      command: s.command,
      args: s.args ?? [],
      env: s.env ?? {},
      url: s.url,
      headers: s.headers ?? {},
      enabled: s.enabled ?? true,
      restart: s.restart,
      restartDelays: s.restartDelays,
      requiresApproval: s.requiresApproval ?? true,
      ignored: Object.keys(s).filter((k) => !known.has(k)),
      source,
      raw: s, // the server object as configured, for the fields a driver reads itself
    },
  };
}

/**
 * loadConfig reads the servers of a start request: inline servers first, then
 * configFiles in order ({"mcpServers": {...}} objects); the first definition
 * of a name wins. It reports config.* events through emit and returns
 * {servers: [def...], invalid: [{name, error, source}]}. It does not look for
 * config files of its own (no config-discovery capability). fields names the
 * server fields beyond host.js's own that the driver reads itself (from the
 * server object as configured), so they draw no config.warning.
 */
export function loadConfig(params, emit, { fields = [] } = {}) {
  const known = new Set([...SERVER_FIELDS, ...fields]);
  const entries = [];
  for (const [name, s] of Object.entries(params.inline ?? {})) {
    entries.push({ name, s, source: { file: '', level: 'inline', provider: 'inline' } });
  }
  for (const f of params.configFiles ?? []) {
    const source = { file: f.path, level: f.level, provider: f.provider ?? 'mcplife' };
    let doc;
    try {
      doc = JSON.parse(fs.readFileSync(f.path, 'utf8'));
    } catch (err) {
      emit('config.error', { attrs: { file: f.path, field: '', message: err.message } });
      continue;
    }
    const servers = doc?.mcpServers;
    if (typeof servers !== 'object' || servers === null) {
      emit('config.error', { attrs: { file: f.path, field: 'mcpServers', message: 'no "mcpServers" object' } });
      continue;
    }
    emit('config.loaded', { attrs: { file: f.path, provider: source.provider, level: f.level, servers: Object.keys(servers).length } });
    for (const [name, s] of Object.entries(servers)) entries.push({ name, s, source });
  }
  const seen = new Map();
  const servers = [];
  const invalid = [];
  for (const { name, s, source } of entries) {
    if (seen.has(name)) {
      emit('config.shadowed', { server: name, attrs: { file: source.file, winner: seen.get(name).file || seen.get(name).level } });
      continue;
    }
    seen.set(name, source);
    const v = validate(name, s, source, known);
    if (v.def) {
      servers.push(expandServer(v.def, params.env ?? {}));
      for (const k of v.def.ignored) {
        emit('config.warning', { server: name, attrs: { file: source.file, field: k, message: `field ${k} is not supported and was ignored` } });
      }
    } else {
      emit('config.error', { server: name, attrs: { file: source.file, field: v.field, message: v.message } });
      invalid.push({ name, error: v.message, source });
    }
  }
  return { servers, invalid };
}

/** packageVersion returns the installed version of an npm package, read from node_modules beside dir. */
export function packageVersion(dirURL, pkg) {
  const url = new URL(`node_modules/${pkg}/package.json`, dirURL);
  return JSON.parse(fs.readFileSync(url, 'utf8')).version;
}
