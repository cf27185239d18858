package host

import (
	"fmt"
	"math/bits"

	"github.com/mcplife/mcplife/runtime/config"
	"github.com/mcplife/mcplife/runtime/event"
	"github.com/mcplife/mcplife/runtime/proc"
	"github.com/mcplife/mcplife/runtime/wire"
)

// Limits on what one server may send (issue 15). docs/LIFECYCLE.md's
// "Limits" section lists them (see Limits).
const (
	// DefaultMaxMessageBytes is the default of Options.MaxMessageBytes.
	DefaultMaxMessageBytes = wire.DefaultMaxMessageBytes
	// DefaultMaxTools is the default of Options.MaxTools.
	DefaultMaxTools = 256
	// DefaultMaxToolNameBytes is the default of Options.MaxToolNameBytes.
	DefaultMaxToolNameBytes = 128
	// DefaultMaxSchemaDepth is the default of Options.MaxSchemaDepth.
	DefaultMaxSchemaDepth = 64
	// ListChangedEventBurst is how many notifications of one debounce
	// window emit tools.changed; later ones are absorbed silently, with a
	// tools.change_flood at 100, 1,000, 10,000...
	ListChangedEventBurst = 10
	// ListChangedMaxDelayFactor bounds a debounce window: notifications
	// re-arm the timer only during the first ListChangedMaxDelayFactor x
	// ListChangedDebounce of the window, so a steady flood cannot postpone
	// the refresh forever.
	ListChangedMaxDelayFactor = 10
)

// maxMessageBytes is the stdout limit of s (negative: none).
func (s *server) maxMessageBytes() int {
	if s.cfg.MaxMessageBytes > 0 {
		return s.cfg.MaxMessageBytes
	}
	return s.rt.opts.MaxMessageBytes
}

// stderrLimit is the stderr tail size of s.
func (s *server) stderrLimit() int {
	if s.cfg.StderrLimit > 0 {
		return s.cfg.StderrLimit
	}
	return s.rt.opts.StderrLimit
}

// stdoutSpec fills the stdout guard fields (and the stderr tail size) of a
// stdio process spec.
func (s *server) stdoutSpec(spec proc.Spec) proc.Spec {
	spec.StderrLimit = s.stderrLimit()
	spec.MaxLineLength = s.maxMessageBytes()
	spec.OnNoise = func(n wire.Noise) {
		// The 1st, 2nd, 4th, 8th... line: a flood of noise costs a few
		// dozen events, not one per line.
		if bits.OnesCount(uint(n.Lines)) == 1 {
			s.emit(event.TransportNoise, event.Int("lines", n.Lines), event.Int("bytes", n.Bytes), event.String("sample", n.Sample))
		}
	}
	spec.Absorb = s.absorbListChanged
	spec.OnTooLarge = func(e *wire.TooLargeError) {
		s.emit(event.TransportOversized, event.Int("limit", e.Limit), event.Bool("json", e.JSON), event.String("sample", e.Sample))
	}
	return spec
}

// Limit documents one bound the runtime puts on what a server may send or on
// what it keeps; docs/LIFECYCLE.md's "Limits" section is rendered from
// Limits.
type Limit struct {
	// What is bounded.
	What string
	// Default is the default value, rendered from the constant in force.
	Default string
	// Config is the server config field that sets it, or "—".
	Config string
	// Option is the Options field that sets it, or "—".
	Option string
	// Exceeded says what happens past the limit.
	Exceeded string
}

// Limits lists every limit, with defaults taken from the constants in force.
func Limits() []Limit {
	return []Limit{
		{"one stdout message or non-JSON line of a stdio server", fmt.Sprintf("%d bytes (16 MiB, go-sdk's own line limit)", DefaultMaxMessageBytes),
			"`maxMessageBytes` (1024 to 1073741824)", "`MaxMessageBytes` (negative: none)",
			"`transport.oversized` (limit, json, sample); the connection ends with `stdout ... exceeds the limit of N bytes (starts \"...\")`: calls in flight fail at once with `mcp_connection_lost`, a connect attempt fails (`server.failed`), and the restart policy decides what follows. A non-JSON line is never buffered; a JSON message at most up to the limit, and the buffer a message over 64 KiB grew is let go once it is read (nothing of it stays for the rest of the connection)."},
		{"non-JSON lines on a stdio server's stdout (banners, logs, invalid UTF-8)", "none: each is dropped in constant memory", "—", "—",
			"Dropped; `transport.noise` (lines, bytes, sample) for the 1st, 2nd, 4th, 8th... line of a connection, so a flood costs a few dozen events. The connection goes on."},
		{"samples of what a server sent (in events and errors)", fmt.Sprintf("%d bytes", wire.SampleBytes), "—", "—",
			"Cut; invalid UTF-8 and control characters become U+FFFD."},
		{"stderr kept per process", fmt.Sprintf("last %d bytes", proc.DefaultStderrLimit), fmt.Sprintf("`stderrLimit` (%d to %d)", config.MinStderrLimit, config.MaxStderrLimit), "`StderrLimit`",
			"A fixed-size ring, allocated once at the first byte: older bytes are overwritten as they arrive, so its memory is the limit whatever the server writes; stderr is always drained, so a chatty server never blocks on a full pipe. The tail (starting on a whole UTF-8 character) is shown in `server.failed` and the status."},
		{"tools per server", fmt.Sprintf("%d", DefaultMaxTools), "—", "`MaxTools`",
			"Listing stops once one more tool arrived (no further pages are requested); the first ones are kept; `tools.limited` reason `too-many`."},
		{"tool name length", fmt.Sprintf("%d bytes (the MCP specification's name length)", DefaultMaxToolNameBytes), "—", "`MaxToolNameBytes`",
			"The tool is dropped, the others stay; `tools.limited` reason `name-too-long` with the name's first 200 bytes."},
		{"input schema nesting", fmt.Sprintf("%d levels of objects and arrays", DefaultMaxSchemaDepth), "—", "`MaxSchemaDepth`",
			"The tool is dropped, the others stay; `tools.limited` reason `schema-too-deep`. A message nested deeper than 1,000 JSON levels is refused by go-sdk's decoder: the tools/list fails and so does the connect attempt (`server.failed`)."},
		{"tools/list_changed events per debounce window", fmt.Sprintf("%d `tools.changed`; the window re-arms during its first %d debounce periods", ListChangedEventBurst, ListChangedMaxDelayFactor), "—", "`ListChangedDebounce` (the period)",
			"Later notifications are absorbed into the window's single refresh; `tools.change_flood` at 100, 1,000, 10,000... notifications. A steady flood cannot postpone the refresh past the re-arm bound. While a window is open, the stdout filter (package wire) counts each further list_changed of 512 bytes or less into it before go-sdk sees it, and drops it: go-sdk would allocate about 100 KB to decode each one (a fresh decoder buffer per message, three per message). 100,000 notifications take 0.3 s in process and allocate 20 MB (`BenchmarkHostileServer/list-changed-100k`; 8-70 s and 10 GB before), so scenario 126 floods 100,000. Resources and prompts list_changed are absorbed the same way, and dropped when the server does not follow that list."},
		{"replies whose id matches no call in flight (unknown or duplicate ids)", "none", "—", "—",
			fmt.Sprintf("Dropped by go-sdk; the connection and the calls go on. A stdio or SSE connection reports them: `transport.stray_reply` (id, reason `unknown` or `duplicate`, replies) for the 1st, 2nd, 4th, 8th... stray reply of each reason. It remembers the requests in flight and the last %d answered and %d cancelled ids (a late reply to a cancelled call is no stray), so its memory does not grow with what the server sends. Streamable HTTP connections are not watched (go-sdk's client connection cannot be wrapped there).", strayMemory, strayMemory)},
		{"one config file (discovery, the config writer, `FileCredentials`)", fmt.Sprintf("%d bytes (%d MiB)", config.MaxFileBytes, config.MaxFileBytes>>20), "—", "—",
			fmt.Sprintf("The file is refused with an error diagnostic naming it (`cannot read config file: read FILE: file too large: more than the limit of %d bytes (%d MiB)`) after reading one byte past the limit, never more; the other files' servers still load. A path that resolves (through symlinks) to anything but a regular file, such as a symlink to `/dev/zero`, a FIFO or a directory, is refused the same way (`not a regular file (a character device)`) before it is read: it is stat'ed first and opened without blocking.", config.MaxFileBytes, config.MaxFileBytes>>20)},
		{"requests a server has in flight to the client (ping, sampling, elicitation, roots/list: read, answer not yet written)", fmt.Sprintf("%d per connection", MaxServerRequests), "—", "—",
			"go-sdk queues every request it reads and answers them one by one, holding a goroutine per answer blocked on writing it, so 300,000 pings from a server that reads no answers took 2.2 GB in 15 s (1 GB in 12 s when it reads them). One request past the limit ends the connection: it is closed at once, which releases the answers blocked on the server's stdin, and the read fails with `the server sent more than N requests to the client without waiting for their answers (the last \"ping\"); the connection is closed`: calls in flight fail with `mcp_connection_lost`, a connect attempt fails (`server.failed`), and the restart policy decides what follows. Every transport is bounded: stdio and SSE by wrapping go-sdk's connection; streamable HTTP, whose go-sdk connection cannot be wrapped, in the connection's HTTP client, which reads the messages of every SSE stream (the GET one and those of POSTs) and JSON body and counts a request answered once the POST carrying its answer is over. There, one request past the limit also closes the connection's sockets (releasing the answers a server holds unread) and fails every later request of the connection, and the runtime ends the connection with that error (go-sdk alone would only fail the call whose stream broke); an SSE event or JSON body over the server's `maxMessageBytes` (default 16 MiB, go-sdk's own SSE event limit) ends it the same way with `the server's SSE event exceeds the limit of N bytes (starts \"...\")` (or `JSON body`), so the counting keeps at most one such event."},
		{"event history kept in memory", fmt.Sprintf("%d events", DefaultEventLimit), "—", "`EventLimit` (negative: all)",
			"A ring: the oldest events are dropped."},
		{"tool result text", fmt.Sprintf("%d characters", DefaultMaxResultChars), "`maxResultChars`", "`MaxResultChars`",
			"Truncated with a note of the original size, inside the boundary markers; `tool.truncated`."},
	}
}
