package host

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcplife/mcplife/runtime/clock"
	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Options. Each applies when the option is zero.
const (
	DefaultConnectConcurrency  = 8
	DefaultStartupGate         = 250 * time.Millisecond
	DefaultProtocolVersion     = "2025-11-25"
	DefaultToolTimeout         = 5 * time.Minute
	DefaultProbeTimeout        = 3 * time.Second
	DefaultUnregisterGrace     = 5 * time.Second
	DefaultStabilityWindow     = 60 * time.Second
	DefaultAcquireTimeout      = 60 * time.Second
	DefaultListChangedDebounce = 100 * time.Millisecond
	DefaultMaxResultChars      = 50_000
	DefaultEventLimit          = 10_000
)

// Dialer makes the transport for one connect attempt. The runtime uses its
// own dialer (stdio processes, streamable HTTP, SSE) unless Options.Dial is
// set; tests set it to connect in-memory servers.
type Dialer func(ctx context.Context, srv *config.Server, resolved *config.Resolved) (mcp.Transport, error)

// Options configures a Runtime. The zero value is usable: it discovers no
// files unless Discovery names a project or home directory.
type Options struct {
	// Clock runs every timer of the runtime; nil means the real clock.
	Clock clock.Clock
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Events records lifecycle events; nil makes a new recorder.
	Events *event.Recorder

	// Discovery says where server configs come from.
	Discovery config.Options
	// Trusted marks the workspace trusted: project-level stdio servers may
	// run and project-level "!cmd" values are honoured.
	Trusted bool
	// Credentials supplies OAuth tokens; nil means none.
	Credentials config.CredentialStore
	// Authorize runs the user-agent step of the OAuth authorization-code
	// flow (a server whose auth block has "grant": "authorization_code"):
	// it gets the authorization URL and returns the redirect's code and
	// state. nil means the host has no UI: such a server that answers 401
	// goes to state needs-auth.
	Authorize AuthorizeFunc
	// OAuthRedirectURL is the redirect URI of the authorization-code flow
	// when a server's auth.redirectUri sets none (DefaultOAuthRedirectURL).
	OAuthRedirectURL string
	// Shell runs "!cmd" config values; nil means sh -c.
	Shell func(ctx context.Context, cmd string) (string, error)

	// CacheDir holds the tool cache; "" disables it.
	CacheDir string
	// ConnectConcurrency caps concurrent connect attempts (default 8).
	ConnectConcurrency int
	// StartupGate bounds how long session start waits for servers (default
	// 250 ms). A negative value closes the gate at once: servers still
	// pending are then deferred, registered late or held exactly as after
	// the gate fired.
	StartupGate time.Duration
	// LateRegistration makes servers that are still pending at the gate and
	// have no cache register their tools when they arrive, instead of holding
	// session start until they settle (seed 000's default).
	LateRegistration bool
	// ProtocolVersion is the MCP protocol version requested first; a
	// server's protocolVersion overrides it. Unset, stdio and streamable
	// HTTP servers are asked 2026-07-28 (server/discover; a handshake-era
	// server gets initialize on the same connection, also one that ignores
	// discover) and sse servers 2025-11-25; a modern-only server that
	// refuses initialize is asked 2026-07-28 (docs/LIFECYCLE.md, "Protocol
	// eras").
	ProtocolVersion string
	// ToolTimeout is the default per-call timeout when a server sets none
	// (5 min).
	ToolTimeout time.Duration
	// ProbeTimeout bounds each step of the health probe (3 s).
	ProbeTimeout time.Duration
	// IdleProbeInterval, when positive, probes every connected server that
	// has no tool call in flight this often, on the clock (ping, then
	// tools/list, each bounded by ProbeTimeout), so that a server wedged
	// while idle is found and restarted (reason idle-probe-failure) before
	// a call meets it. Zero, the default, never probes an idle server.
	IdleProbeInterval time.Duration
	// UnregisterGrace keeps a dropped server's tools registered this long
	// (5 s) so a quick reconnect does not make them flap.
	UnregisterGrace time.Duration
	// StabilityWindow is how long a server must stay up before its backoff
	// step returns to zero (60 s): the crash-loop breaker.
	StabilityWindow time.Duration
	// AcquireTimeout bounds the first acquire of a cold shared server (60 s).
	AcquireTimeout time.Duration
	// IdleTimeout stops a shared server this long after its last session
	// released it; zero keeps servers running (seed 001).
	IdleTimeout time.Duration
	// StopGrace bounds each step of stopping a stdio process (2 s each);
	// its Stdin step also bounds how long a handshake goes on after the
	// server process exited while a descendant holds its stdout open.
	StopGrace proc.Grace
	// ListChangedDebounce coalesces bursts of tools/list_changed (100 ms).
	ListChangedDebounce time.Duration
	// RestartWait lets a call that meets a running restart wait up to this
	// long for it; zero fails such calls at once with mcp_restart_in_progress.
	RestartWait time.Duration
	// NoRetryAfterRestart stops a call whose timeout caused a restart from
	// being retried once on the new connection.
	NoRetryAfterRestart bool
	// MaxResultChars is the default result cap (50,000 characters).
	MaxResultChars int
	// EventLimit bounds the event history kept in memory to the latest
	// EventLimit events (default 10,000); a negative value keeps all.
	EventLimit int
	// MaxMessageBytes bounds one stdout message or non-JSON line of a stdio
	// server (default 16 MiB, go-sdk's own line limit); a server's
	// maxMessageBytes overrides it; a negative value means no limit. A server
	// that exceeds it loses its connection (transport.oversized).
	MaxMessageBytes int
	// StderrLimit is how many bytes of a stdio server's stderr are kept as
	// its tail, in a fixed-size ring (default 8 KiB, proc.DefaultStderrLimit);
	// a server's stderrLimit overrides it.
	StderrLimit int
	// MaxTools bounds the tools kept per server (default 256); listing
	// stops past it (tools.limited).
	MaxTools int
	// MaxToolNameBytes drops tools whose MCP name is longer (default 128,
	// the MCP specification's name length).
	MaxToolNameBytes int
	// MaxSchemaDepth drops tools whose input schema nests objects and arrays
	// deeper (default 64).
	MaxSchemaDepth int
	// Sampling answers sampling/createMessage for servers whose config has
	// "sampling": true, a request of the server in the handshake era and a
	// multi round-trip input request of a tool result in the stateless
	// revision; nil refuses every sampling request and advertises no
	// sampling capability.
	Sampling SamplingFunc
	// Progress, when set, receives every notifications/progress of a tool
	// call of a server whose config has "progress": true (after its
	// tool.progress event). It runs on the connection's read loop: it must
	// not block.
	Progress func(ProgressUpdate)
	// Dial overrides how transports are made (tests).
	Dial Dialer
	// ClientName is the MCP client name sent in initialize ("mcplife").
	ClientName string
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.EventLimit == 0 {
		o.EventLimit = DefaultEventLimit
	}
	if o.Events == nil {
		o.Events = event.NewRecorder(event.RecorderOptions{Clock: o.Clock, Logger: o.Logger, Limit: max(o.EventLimit, 0)})
	}
	if o.ConnectConcurrency <= 0 {
		o.ConnectConcurrency = DefaultConnectConcurrency
	}
	if o.StartupGate == 0 {
		o.StartupGate = DefaultStartupGate
	}
	if o.ToolTimeout == 0 {
		o.ToolTimeout = DefaultToolTimeout
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.UnregisterGrace == 0 {
		o.UnregisterGrace = DefaultUnregisterGrace
	}
	if o.StabilityWindow <= 0 {
		o.StabilityWindow = DefaultStabilityWindow
	}
	if o.AcquireTimeout <= 0 {
		o.AcquireTimeout = DefaultAcquireTimeout
	}
	if o.ListChangedDebounce <= 0 {
		o.ListChangedDebounce = DefaultListChangedDebounce
	}
	if o.MaxResultChars <= 0 {
		o.MaxResultChars = DefaultMaxResultChars
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.StderrLimit <= 0 {
		o.StderrLimit = proc.DefaultStderrLimit
	}
	if o.MaxTools <= 0 {
		o.MaxTools = DefaultMaxTools
	}
	if o.MaxToolNameBytes <= 0 {
		o.MaxToolNameBytes = DefaultMaxToolNameBytes
	}
	if o.MaxSchemaDepth <= 0 {
		o.MaxSchemaDepth = DefaultMaxSchemaDepth
	}
	if o.OAuthRedirectURL == "" {
		o.OAuthRedirectURL = DefaultOAuthRedirectURL
	}
	if o.ClientName == "" {
		o.ClientName = "mcplife"
	}
	return o
}
