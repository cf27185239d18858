package conformance

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/fixtures/mcp-fixture/fixture"
	"github.com/mcplife/mcplife/runtime/event"
)

// Requirements of the remote profile: what an implementation must do when a
// streamable HTTP server fails the way remote servers fail in the field
// (issue 14). The fixture is served by the harness (HTTPFixture) with the
// remote knobs; verdicts rest on the fixture's journal (what the server saw)
// and on remote.* events.

// remoteServer is an inline http server pointing at a harness-served
// fixture.
func remoteServer(addr string) Server {
	return Server{"type": "http", "url": "http://" + addr + "/mcp"}
}

// writeCredentials writes the credential provider's file.
func (h *H) writeCredentials(path, token string) {
	h.must(os.WriteFile(path, []byte(`{"fx":{"accessToken":"`+token+`"}}`), 0o600), "writing the credentials file")
}

var _ = Spec(Requirement{
	ID: "REMOTE-CONFIG-001", Level: Must, Profile: driver.ProfileRemote, Area: "config", Eras: Both,
	Statement: "An implementation MUST connect a server configured with a url and no type as a streamable HTTP server, sending the headers of its configuration with every request.",
	Source:    Source{"seed 002", "transport inferred as server.transport ?? (command ? \"stdio\" : url ? \"http\" : \"stdio\")"},
}, func(h *H) {
	// The fixture refuses any request without this bearer token
	// (journal auth-rejected), so only the configured header gets through.
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_AUTH_TOKENS": "from-the-config"})
	srv := Server{"url": "http://" + addr + "/mcp", "headers": map[string]string{"Authorization": "Bearer from-the-config"}}
	h.Start(Setup{Servers: map[string]Server{"fx": srv}})
	rep := h.Open("main")
	h.AwaitJournal("fx", "tools-list", 1)
	h.Verify(Response, contains(rep.Ready, "fx"), "the server with a url and no type connected", "ready=%v failed=%v", rep.Ready, rep.Failed)
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "over http"})
	j := h.AwaitJournal("fx", "call-start", 1)
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "over http"), "a call answers over HTTP", "error=%v text=%q", r.Error, r.Result.Text)
	h.Verify(Journal, j.Count("auth-rejected") == 0, "every request carried the configured header", "%d auth-rejected", j.Count("auth-rejected"))
	st := h.Status("fx")
	h.Verify(Response, st.Transport == "http", "status names the transport http", "transport %q", st.Transport)
})

var _ = Spec(Requirement{
	ID: "REMOTE-EXPIRY-001", Level: Must, Profile: driver.ProfileRemote, Area: "session-expiry", Eras: Legacy,
	Statement: "An implementation MUST, when a remote server answers a tools/call with 404 for the session, re-initialize a new session at once and send the call again on it, so the server runs the call exactly once and no restart is scheduled.",
	Source:    Source{"issue 14", "on 404 for a known session, re-initialize once and retry the request if it was idempotent (tools/list, ping; a tools/call is retried only when the server never saw it)"},
}, func(h *H) {
	// initialized and tools/list are the first two session POSTs; the call
	// is the third.
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_SESSION_EXPIRE_AFTER": "2"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr)}})
	h.Open("main")
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "exactly once"})
	j := h.AwaitJournal("fx", "session-expired", 1)
	h.Verify(Journal, len(j.Where("session-expired", "method", "tools/call")) == 1, "the server forgot the session at the call", "%d session-expired", j.Count("session-expired"))
	h.Verify(Response, r.Error == nil && !r.Result.IsError && strings.Contains(r.Result.Text, "exactly once"), "the call succeeded", "error=%v text=%q", r.Error, r.Result.Text)
	j = h.Journal("fx")
	h.Verify(Journal, j.Count("initialize") == 2, "a new session was initialized", "%d initialize", j.Count("initialize"))
	h.Verify(Journal, j.Count("call-start") == 1, "the server ran the call exactly once", "%d call-start", j.Count("call-start"))
	h.Await(Ev(event.RemoteRequestRetried, "fx", "method", "tools/call", "reason", "session-expired"))
	h.Verify(Events, h.Count(Ev(event.RestartScheduled, "fx")) == 0, "no restart was scheduled", "%d restart.scheduled", h.Count(Ev(event.RestartScheduled, "fx")))
	// The server is connected on its new session, and the status counts
	// the re-initialization (DRIVER.md, status sessionReinits).
	h.Await(Ev(event.RemoteSessionReinitialized, "fx"))
	st := h.Status("fx")
	h.Verify(Response, st.State == "connected" && st.SessionReinits == 1, "status: connected, one session re-initialized", "state %q sessionReinits %d", st.State, st.SessionReinits)
})

var _ = Spec(Requirement{
	ID: "REMOTE-EXPIRY-004", Level: Must, Profile: driver.ProfileRemote, Area: "session-expiry", Eras: Legacy,
	Statement: "An implementation MUST take a 404 to a request carrying its session id as the session's loss whatever the response's body, a JSON-RPC error included (the TypeScript SDK's server answers a forgotten session with 404 and -32001 \"Session not found\"): it re-initializes a new session and sends a tools/call the server never saw again on it, so the server runs the call exactly once.",
	Source:    Source{"issue 14", "on 404 for a known session, re-initialize once and retry the request if it was idempotent (tools/list, ping; a tools/call is retried only when the server never saw it)"},
}, func(h *H) {
	// initialized and tools/list are the first two session POSTs; the call
	// is the third.
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_SESSION_EXPIRE_AFTER": "2", "MCP_FIXTURE_SESSION_EXPIRED_BODY": "jsonrpc"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr)}})
	h.Open("main")
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "exactly once"})
	j := h.AwaitJournal("fx", "session-expired", 1)
	h.Verify(Journal, len(j.Where("session-expired", "method", "tools/call")) == 1, "the server forgot the session at the call and answered 404 with a JSON-RPC error", "%d session-expired", j.Count("session-expired"))
	h.Verify(Response, r.Error == nil && !r.Result.IsError && strings.Contains(r.Result.Text, "exactly once"), "the call succeeded", "error=%v text=%q", r.Error, r.Result.Text)
	j = h.Journal("fx")
	h.Verify(Journal, j.Count("initialize") == 2, "a new session was initialized", "%d initialize", j.Count("initialize"))
	h.Verify(Journal, j.Count("call-start") == 1, "the server ran the call exactly once", "%d call-start", j.Count("call-start"))
})

var _ = Spec(Requirement{
	ID: "REMOTE-CLOSE-001", Level: Must, Profile: driver.ProfileRemote, Area: "teardown", Timing: true, Eras: Legacy,
	Statement: "An implementation MUST complete the close of a remote server's session when the server never answers the DELETE that ends it: it gives the DELETE up at once or after a wait on its own clock, and session.close returns.",
	Source:    Source{"field failure 10", "Stdio Close blocks forever waiting for the child. Needs: bounded close with escalation (the remote close waits on the server's answer to DELETE)"},
}, func(h *H) {
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_DELETE_HANG": "1"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr).With("shared", false)}})
	h.Open("main")
	h.AwaitJournal("fx", "tools-list", 1)
	done := h.closeInBackground("main")
	h.AwaitJournal("fx", "delete-held", 1)
	returned := func() bool { return len(done) > 0 }
	if h.Virtual() {
		// Either the close returns without the DELETE's answer, or it
		// waits on a timer of its clock; a wait on anything else (the
		// held DELETE, a real-time timeout) leaves the implementation
		// idle, which ends these waits.
		h.Eventually("session.close returned or a timer armed", func() bool { return returned() || len(h.Pending()) > 0 })
		if !returned() {
			h.AdvanceToNext()
		}
	}
	h.Eventually("session.close returned", returned)
	h.must(<-done, "session.close")
	j := h.AwaitJournal("fx", "delete-abandoned", 1)
	h.Verify(Journal, j.Count("delete-held") == 1 && j.Count("delete-abandoned") == 1, "the DELETE was sent, left unanswered and given up", "%d delete-held, %d delete-abandoned", j.Count("delete-held"), j.Count("delete-abandoned"))
})

var _ = Spec(Requirement{
	ID: "REMOTE-EXPIRY-002", Level: Must, Profile: driver.ProfileRemote, Area: "session-expiry", Timing: true, Eras: Legacy,
	Statement: "An implementation MUST re-initialize an expired session at once only when its last re-initialization is at least the stability window old; a session that expires again sooner MUST go to the restart policy instead (remote.session_reinit_failed, then restart.scheduled with the policy's delay), with no handshake before that delay has passed.",
	Source:    Source{"issue 14", "on 404 for a known session, re-initialize once and retry the request; a session that keeps expiring falls back to the restart policy's bounds (LIFECYCLE.md: the new session expires again within the stability window)"},
}, func(h *H) {
	// The first call is the third session POST: the fixture forgets the
	// session there. Later expiries are on command (SIGUSR1).
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_SESSION_EXPIRE_AFTER": "2"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr).With("restartDelays", []int64{3000})}, Options: &driver.StartOptions{StabilityWindowMs: Ms(10000)}})
	h.Open("main")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "one"})
	first := h.Await(Ev(event.RemoteSessionReinitialized, "fx"))
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "one"), "the call of the first expiry succeeded on a new session", "error=%v text=%q", r.Error, r.Result.Text)

	// Exactly one stability window later the last re-initialization is
	// old enough: the next expiry is re-initialized at once again.
	h.Advance(10000)
	h.Kill(pid, syscall.SIGUSR1)
	h.AwaitJournal("fx", "expire-command", 1)
	r = h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "two"})
	second := h.AwaitAfter(first.Seq, Ev(event.RemoteSessionReinitialized, "fx"))
	j := h.Journal("fx")
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "two"), "an expiry one stability window after the last re-initialization: the call succeeded on a new session", "error=%v text=%q", r.Error, r.Result.Text)
	h.Verify(Journal, j.Count("initialize") == 3, "that expiry was re-initialized at once", "%d initialize", j.Count("initialize"))

	// 1 ms short of the window: the restart policy takes over.
	h.Advance(9999)
	h.Kill(pid, syscall.SIGUSR1)
	h.AwaitJournal("fx", "expire-command", 2)
	third := h.Call("main", "mcp_fx_echo", map[string]any{"text": "three"})
	h.AwaitAfter(second.Seq, Ev(event.RemoteSessionReinitFailed, "fx"))
	sched := h.AwaitAfter(second.Seq, Ev(event.RestartScheduled, "fx"))
	h.Verify(Events, sched.Attrs["delay_ms"] == int64(3000), "the restart waits the policy's delay", "restart.scheduled %v", sched.Attrs)
	h.Result(third)
	h.Advance(2999)
	h.AwaitTimerDue(1, "the restart after the repeated expiry")
	j = h.Journal("fx")
	h.Verify(Journal, j.Count("initialize") == 3, "no handshake before the restart delay passed", "%d initialize", j.Count("initialize"))
	h.Advance(1)
	j = h.AwaitJournal("fx", "initialize", 4)
	h.Verify(Journal, j.Count("initialize") == 4, "the restart initialized one new session", "%d initialize", j.Count("initialize"))
	h.Verify(Events, h.Count(Ev(event.RestartScheduled, "fx")) == 1, "only the repeated expiry scheduled a restart", "%d restart.scheduled", h.Count(Ev(event.RestartScheduled, "fx")))
})

var _ = Spec(Requirement{
	ID: "REMOTE-EXPIRY-003", Level: Must, Profile: driver.ProfileRemote, Area: "session-expiry", Eras: Legacy,
	Statement: "An implementation MUST, when the health probe after a tool timeout meets a 404 for the session, re-initialize a new session and probe on it: a server that answers there is healthy and is not restarted.",
	Source:    Source{"issue 14", "on 404 for a known session, re-initialize once and retry the request if it was idempotent (tools/list, ping; a tools/call is retried only when the server never saw it)"},
}, func(h *H) {
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_HANG_MS": "600000"})
	h.Start(Setup{
		Servers: map[string]Server{"fx": remoteServer(addr)},
		Options: &driver.StartOptions{ToolTimeoutMs: Ms(1000), ProbeTimeoutMs: Ms(3000)},
	})
	h.Open("main")
	pid := h.AwaitJournal("fx", "tools-list", 1).PIDs()[0]
	id := h.Call("main", "mcp_fx_test", map[string]any{"text": "slow"})
	h.AwaitJournal("fx", "hang-start", 1)
	// The server forgets the session while the call hangs: the probe's
	// first request meets the 404.
	h.Kill(pid, syscall.SIGUSR1)
	h.AwaitJournal("fx", "expire-command", 1)
	// A probe whose last request (tools/list, after ping) fails judges the
	// server unhealthy, which then is restarted and the timed-out call sent
	// again (SHARED-PROBE-002): either contradicts at once.
	var r, r2 driver.CallResult
	h.Unless(func() string {
		for _, e := range h.Client().Events() {
			if e.Kind == event.ProbeFinished && e.Server == "fx" && e.Attrs["healthy"] == false && e.Attrs["method"] == "tools/list" {
				return fmt.Sprintf("the health probe judged the server unhealthy: %v", e.Attrs)
			}
		}
		if n := len(h.readJournal("fx").Where("call-start", "tool", "test")); n > 1 {
			return fmt.Sprintf("the timed-out call was sent again (%d call-start of tool test): the server was judged unhealthy", n)
		}
		return ""
	}, func() {
		h.Advance(1000)
		r = h.Result(id)
		h.Verify(Response, r.Error != nil && r.Error.Code == string(driver.OutcomeToolTimeout), "the call fails with mcp_tool_timeout", "error=%v", r.Error)
		h.Await(Ev(event.ProbeFinished, "fx", "healthy", "true"))
		// Bound of the negative checks: the next call's answer, after the
		// probe's verdict.
		r2 = h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "next"})
	})
	j := h.Journal("fx")
	h.Verify(Response, r2.Error == nil && !r2.Result.IsError && strings.Contains(r2.Result.Text, "next"), "the next call answers", "error=%v text=%q", r2.Error, r2.Result.Text)
	h.Verify(Journal, j.Count("session-expired") >= 1, "the server answered 404 for the forgotten session", "%d session-expired", j.Count("session-expired"))
	h.Verify(Journal, j.Count("initialize") == 2, "one new session was initialized", "%d initialize", j.Count("initialize"))
	h.Verify(Events, h.Count(Ev(event.RestartScheduled, "fx")) == 0, "no restart was scheduled", "%d restart.scheduled", h.Count(Ev(event.RestartScheduled, "fx")))
	st := h.Status("fx")
	h.Verify(Response, st.State == "connected", "status: connected", "state %q", st.State)
})

var _ = Spec(Requirement{
	ID: "REMOTE-RESUME-001", Level: Must, Profile: driver.ProfileRemote, Area: "stream-resumption", Timing: true, Eras: Legacy,
	Statement: "An implementation MUST resume a response stream that ended before the answer, after an event id, with a GET carrying Last-Event-ID once the server's retry: has passed, and deliver the answer without sending the call again.",
	Source:    Source{"issue 14", "resume a dropped stream with GET and Last-Event-ID honouring `retry:`"},
}, func(h *H) {
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_STREAM_DROP": "1", "MCP_FIXTURE_STREAM_RETRY_MS": "2000"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr)}})
	h.Open("main")
	id := h.Call("main", "mcp_fx_echo", map[string]any{"text": "resumed"})
	h.AwaitJournal("fx", "stream-closed", 1)
	h.Await(Ev(event.RemoteStreamDropped, "fx", "retry_ms", "2000"))
	h.Advance(1999)
	h.AwaitTimerDue(1, "the stream's retry:")
	h.Verify(Journal, h.Journal("fx").Count("stream-resumed") == 0, "no resume before retry: passed", "%d stream-resumed", h.Journal("fx").Count("stream-resumed"))
	h.Advance(1)
	j := h.AwaitJournal("fx", "stream-resumed", 1)
	r := h.Result(id)
	h.Verify(Journal, j.Count("stream-resumed") == 1, "the stream was resumed with Last-Event-ID", "%d stream-resumed", j.Count("stream-resumed"))
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "resumed"), "the call got its answer", "error=%v text=%q", r.Error, r.Result.Text)
	h.Verify(Journal, h.Journal("fx").Count("call-start") == 1, "the call was not sent again", "%d call-start", h.Journal("fx").Count("call-start"))
	// The status counts the resumed stream (DRIVER.md, status streamResumes).
	h.Await(Ev(event.RemoteStreamResumed, "fx"))
	st := h.Status("fx")
	h.Verify(Response, st.StreamResumes == 1, "status counts one resumed stream", "streamResumes %d", st.StreamResumes)
})

var _ = Spec(Requirement{
	ID: "REMOTE-RESUME-002", Level: Must, Profile: driver.ProfileRemote, Area: "stream-resumption", Timing: true, Eras: Legacy,
	Statement: "An implementation MUST authenticate the GET that resumes a dropped response stream as it does its other requests: when the server rejects the bearer token there, it gets a new token from its credential provider once and resumes with it, and the call gets its answer without being sent again.",
	Source:    Source{"issue 14", "resume a dropped stream with GET and Last-Event-ID; on 401/403 refresh the credential once through the configured provider"},
}, func(h *H) {
	creds := h.Path("credentials.json")
	h.writeCredentials(creds, "one")
	// The handshake's three POSTs and the call's own use up token one: the
	// resuming GET meets it expired.
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_STREAM_DROP": "1", "MCP_FIXTURE_STREAM_RETRY_MS": "2000",
		"MCP_FIXTURE_AUTH_TOKENS": "one,two", "MCP_FIXTURE_AUTH_EXPIRE_AFTER": "4"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr).With("auth", map[string]string{"type": "oauth", "credentialId": "fx"})}, CredentialsFile: creds})
	h.Open("main")
	h.AwaitJournal("fx", "tools-list", 1)
	h.writeCredentials(creds, "two")
	id := h.Call("main", "mcp_fx_echo", map[string]any{"text": "resumed"})
	h.AwaitJournal("fx", "stream-closed", 1)
	h.AwaitTimerDue(2000, "the stream's retry:")
	h.Advance(2000)
	r := h.Result(id)
	j := h.Journal("fx")
	h.Verify(Response, r.Error == nil && !r.Result.IsError && strings.Contains(r.Result.Text, "resumed"), "the call got its answer", "error=%v text=%q", r.Error, r.Result.Text)
	h.Verify(Journal, len(j.Where("auth-rejected", "reason", "expired")) == 1, "the server rejected the expired token once, on the resuming GET", "%d auth-rejected", j.Count("auth-rejected"))
	h.Verify(Journal, j.Count("stream-resumed") == 1, "the stream was resumed with Last-Event-ID and the refreshed token", "%d stream-resumed", j.Count("stream-resumed"))
	h.Verify(Journal, j.Count("call-start") == 1, "the call was not sent again", "%d call-start", j.Count("call-start"))
	h.Verify(Journal, j.Count(Handshake) == 1, "the session was not initialized again", "%d initialize", j.Count(Handshake))
})

var _ = Spec(Requirement{
	ID: "REMOTE-RESUME-003", Level: Must, Profile: driver.ProfileRemote, Area: "stream-resumption", Timing: true, Eras: Legacy,
	Statement: "An implementation MUST recognise the answer on a resumed response stream however long it is, deliver it whole, and not resume that stream again once the answer has arrived.",
	Source:    Source{"issue 14", "resume a dropped stream with GET and Last-Event-ID honouring `retry:`"},
}, func(h *H) {
	// 200,000 characters: far more than one read, and more than a client
	// might keep of one line to find the answer in it.
	const size = 200000
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_STREAM_DROP": "1", "MCP_FIXTURE_STREAM_RETRY_MS": "2000"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr)}, Options: &driver.StartOptions{MaxResultChars: Int(size)}})
	h.Open("main")
	id := h.Call("main", "mcp_fx_big", map[string]any{"bytes": size})
	h.AwaitJournal("fx", "stream-closed", 1)
	h.AwaitTimerDue(2000, "the stream's retry:")
	h.Advance(2000)
	r := h.Result(id)
	h.Verify(Response, r.Error == nil && !r.Result.IsError && !r.Result.Truncated && r.Result.OriginalChars == size && strings.Contains(r.Result.Text, fixture.BigText(size)),
		"the call got its whole answer from the resumed stream", "error=%v truncated=%v originalChars=%d", r.Error, r.Result.Truncated, r.Result.OriginalChars)
	// A stream resumed again after its answer would be resumed once any
	// retry delay has passed: a minute of the clock, then a call after it.
	h.Advance(60000)
	after := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "after"})
	h.Verify(Response, after.Error == nil && strings.Contains(after.Result.Text, "after"), "a later call answers", "error=%v text=%q", after.Error, after.Result.Text)
	j := h.AwaitJournal("fx", "call-end", 2)
	h.Verify(Journal, j.Count("stream-resumed") == 1, "the stream was resumed once, before its answer, and never after it", "%d stream-resumed: %v", j.Count("stream-resumed"), j.Of("stream-resumed"))
	h.Verify(Journal, j.Count("call-start") == 2, "no call was sent again", "%d call-start", j.Count("call-start"))
})

var _ = Spec(Requirement{
	ID: "REMOTE-RESUME-004", Level: Must, Profile: driver.ProfileRemote, Area: "stream-resumption", Timing: true, Eras: Legacy,
	Statement: "An implementation MUST read `retry: 0` on a response stream that ended before the answer as a reconnection time of zero, not as a missing `retry:`: it resumes the stream at once, without waiting on its clock, and the call gets its answer without being sent again.",
	Source:    Source{"issue 14", "resume a dropped stream with GET and Last-Event-ID honouring `retry:`"},
}, func(h *H) {
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_STREAM_DROP": "1", "MCP_FIXTURE_STREAM_RETRY_MS": "0"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr)}})
	h.Open("main")
	id := h.Call("main", "mcp_fx_echo", map[string]any{"text": "resumed"})
	h.AwaitJournal("fx", "stream-closed", 1)
	// The clock stands still from here: an implementation that waits on
	// it instead goes idle with its wait pending, which ends this wait.
	r := h.Result(id)
	j := h.Journal("fx")
	h.Verify(Response, r.Error == nil && !r.Result.IsError && strings.Contains(r.Result.Text, "resumed"), "the call got its answer with the clock standing still", "error=%v text=%q", r.Error, r.Result.Text)
	h.Verify(Journal, j.Count("stream-resumed") == 1, "the stream was resumed with Last-Event-ID", "%d stream-resumed", j.Count("stream-resumed"))
	h.Verify(Journal, j.Count("call-start") == 1, "the call was not sent again", "%d call-start", j.Count("call-start"))
})

var _ = Spec(Requirement{
	ID: "REMOTE-AUTH-001", Level: Must, Profile: driver.ProfileRemote, Area: "auth", Eras: Both,
	Statement: "An implementation MUST, when a remote server rejects the bearer token with 401, get a new token from its credential provider once and send the request again with it.",
	Source:    Source{"issue 14", "on 401/403 refresh the credential once through the configured provider"},
}, func(h *H) {
	creds := h.Path("credentials.json")
	h.writeCredentials(creds, "one")
	// The handshake's three POSTs use up token one.
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_AUTH_TOKENS": "one,two", "MCP_FIXTURE_AUTH_EXPIRE_AFTER": "3"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr).With("auth", map[string]string{"type": "oauth", "credentialId": "fx"})}, CredentialsFile: creds})
	h.Open("main")
	h.AwaitJournal("fx", "tools-list", 1)
	h.writeCredentials(creds, "two")
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "authorized"})
	j := h.AwaitJournal("fx", "call-start", 1)
	h.Verify(Journal, len(j.Where("auth-rejected", "reason", "expired")) == 1, "the server rejected the expired token once", "%d auth-rejected", j.Count("auth-rejected"))
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "authorized"), "the call succeeded with the refreshed token", "error=%v text=%q", r.Error, r.Result.Text)
	h.Verify(Journal, j.Count("call-start") == 1, "the server ran the call once", "%d call-start", j.Count("call-start"))
	// The accepted token settles it: the runtime writes its events before
	// the result, so none may say the server needs authorization.
	h.Verify(Events, h.Count(Ev(event.RemoteAuthRequired, "fx")) == 0, "the accepted refresh is not reported as a need for authorization", "%d remote.auth_required", h.Count(Ev(event.RemoteAuthRequired, "fx")))
	st := h.Status("fx")
	h.Verify(Response, st.State == "connected", "status: connected", "state %q", st.State)
})

var _ = Spec(Requirement{
	ID: "REMOTE-AUTH-002", Level: Must, Profile: driver.ProfileRemote, Area: "auth", Eras: Both,
	Statement: "An implementation MUST, when the credential is rejected and the provider has no newer one, report the server as needing authorization (status needs-auth) and not restart it.",
	Source:    Source{"issue 14", "then report the server as needing authorization (a status, not a restart loop)"},
}, func(h *H) {
	creds := h.Path("credentials.json")
	h.writeCredentials(creds, "one")
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_AUTH_TOKENS": "one", "MCP_FIXTURE_AUTH_EXPIRE_AFTER": "3", "MCP_FIXTURE_AUTH_STATUS": "403"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr).With("auth", map[string]string{"type": "oauth", "credentialId": "fx"})}, CredentialsFile: creds})
	h.Open("main")
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "x"})
	h.Verify(Response, r.Error != nil || r.Result.IsError, "the call failed", "error=%v", r.Error)
	authReq := h.Await(Ev(event.RemoteAuthRequired, "fx"))
	// The event may come before the state changes: await the state.
	h.AwaitStatus("fx", "needs-auth", func(st driver.ServerStatus) bool { return st.State == "needs-auth" })
	h.Advance(10 * 60 * 1000)
	// Bound of the negative checks: the status answer after ten virtual
	// minutes.
	st := h.Status("fx")
	later := h.EventsAfter(authReq.Seq, "fx", event.RestartScheduled, event.RestartAttempt, event.ServerConnecting)
	h.Verify(Events, len(later) == 0, "nothing reconnects or restarts it", "events after remote.auth_required: %v", later)
	h.Verify(Response, st.State == "needs-auth", "status says needs-auth", "state=%s", st.State)
	j := h.Journal("fx")
	h.Verify(Journal, j.Count(Handshake) == 1, "no reconnect in 10 minutes", "%d initialize", j.Count(Handshake))
})

var _ = Spec(Requirement{
	ID: "REMOTE-AUTH-003", Level: Must, Profile: driver.ProfileRemote, Area: "auth", Eras: Both,
	Statement: "An implementation MUST, when the token its credential provider gave on a refresh is rejected too, report the server as needing authorization (status needs-auth), send that request no third time and not restart the server.",
	Source:    Source{"issue 14", "on 401/403 refresh the credential once through the configured provider, then report the server as needing authorization (a status, not a restart loop)"},
}, func(h *H) {
	creds := h.Path("credentials.json")
	h.writeCredentials(creds, "one")
	// The handshake's three POSTs use up token one; the provider then
	// hands out a token the server does not know.
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_AUTH_TOKENS": "one,two", "MCP_FIXTURE_AUTH_EXPIRE_AFTER": "3"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr).With("auth", map[string]string{"type": "oauth", "credentialId": "fx"})}, CredentialsFile: creds})
	h.Open("main")
	h.AwaitJournal("fx", "tools-list", 1)
	h.writeCredentials(creds, "three")
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "x"})
	h.Verify(Response, r.Error != nil || r.Result.IsError, "the call failed", "error=%v text=%q", r.Error, r.Result.Text)
	authReq := h.Await(Ev(event.RemoteAuthRequired, "fx"))
	h.AwaitStatus("fx", "needs-auth", func(st driver.ServerStatus) bool { return st.State == "needs-auth" })
	h.Advance(10 * 60 * 1000)
	// Bound of the negative checks: the status answer after ten virtual
	// minutes.
	st := h.Status("fx")
	later := h.EventsAfter(authReq.Seq, "fx", event.RestartScheduled, event.RestartAttempt, event.ServerConnecting, event.RemoteAuthRefreshed)
	j := h.Journal("fx")
	// Closing the session (DELETE) with the rejected token is not a try of
	// the call.
	rejected := j.Where("auth-rejected", "method", "tools/call")
	reasons := make([]string, len(rejected))
	for i, e := range rejected {
		reasons[i] = e.Str("reason")
	}
	h.Verify(Journal, strings.Join(reasons, ",") == "expired,unknown", "the server rejected the call's expired token, then the refreshed one, and saw no third try", "tools/call auth-rejected reasons %v", reasons)
	h.Verify(Events, h.Count(Ev(event.RemoteAuthRefreshed, "fx")) == 1, "the provider was asked once", "%d remote.auth_refreshed", h.Count(Ev(event.RemoteAuthRefreshed, "fx")))
	h.Verify(Events, len(later) == 0, "nothing refreshes, reconnects or restarts it afterwards", "events after remote.auth_required: %v", later)
	h.Verify(Response, st.State == "needs-auth", "status says needs-auth", "state=%s", st.State)
	h.Verify(Journal, j.Count("call-start") == 0 && j.Count(Handshake) == 1, "the call never ran, and no new handshake", "%d call-start, %d initialize", j.Count("call-start"), j.Count(Handshake))
})

var _ = Spec(Requirement{
	ID: "REMOTE-RETRYAFTER-001", Level: Must, Profile: driver.ProfileRemote, Area: "retry-after", Timing: true, Eras: Both,
	Statement: "An implementation MUST, when a remote server answers a call 429 with Retry-After, wait that long, capped by the server's longest restart delay, before sending the call again, once.",
	Source:    Source{"issue 14", "honour Retry-After within the restart policy's bounds"},
}, func(h *H) {
	// The handshake sends three POSTs; the call is the fourth.
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_THROTTLE_AT": "4", "MCP_FIXTURE_RETRY_AFTER": "600"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr).With("restartDelays", []int64{1000, 7000})}})
	h.Open("main")
	id := h.Call("main", "mcp_fx_echo", map[string]any{"text": "later"})
	h.AwaitJournal("fx", "throttled", 1)
	h.Await(Ev(event.RemoteThrottled, "fx", "delay_ms", "7000"))
	h.Advance(6999)
	h.AwaitTimerDue(1, "the capped Retry-After")
	h.Verify(Journal, h.Journal("fx").Count("call-start") == 0, "the call is not sent again before the capped Retry-After", "%d call-start", h.Journal("fx").Count("call-start"))
	h.Advance(1)
	j := h.AwaitJournal("fx", "call-start", 1)
	r := h.Result(id)
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "later"), "the call succeeded", "error=%v text=%q", r.Error, r.Result.Text)
	h.Verify(Journal, j.Count("throttled") == 1 && j.Count("call-start") == 1, "one refusal, one run", "%d throttled, %d call-start", j.Count("throttled"), j.Count("call-start"))
})

var _ = Spec(Requirement{
	ID: "REMOTE-RETRYAFTER-002", Level: Must, Profile: driver.ProfileRemote, Area: "retry-after", Timing: true, Eras: Both,
	Statement: "An implementation MUST schedule the next connect attempt no sooner than the Retry-After of a handshake the server refused with 503, even when the restart policy's delay is shorter.",
	Source:    Source{"issue 14", "honour Retry-After within the restart policy's bounds"},
}, func(h *H) {
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_THROTTLE_AT": "1", "MCP_FIXTURE_THROTTLE_COUNT": "2", "MCP_FIXTURE_THROTTLE_STATUS": "503", "MCP_FIXTURE_RETRY_AFTER": "5"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr)}, Options: &driver.StartOptions{StartupGateMs: Ms(0), LateRegistration: Bool(true)}})
	h.Open("main")
	h.AwaitJournal("fx", "throttled", 1)
	h.Await(Ev(event.RemoteThrottled, "fx", "delay_ms", "5000"))
	h.Advance(5000)
	h.AwaitJournal("fx", "throttled", 2)
	h.Await(Ev(event.RestartScheduled, "fx", "delay_ms", "5000"))
	h.Advance(4999)
	h.AwaitTimerDue(1, "the restart after the Retry-After")
	h.Verify(Journal, h.Journal("fx").Count(Handshake) == 0, "no handshake before the Retry-After passed", "%d initialize", h.Journal("fx").Count(Handshake))
	h.Advance(1)
	j := h.AwaitJournal("fx", Handshake, 1)
	h.Verify(Journal, j.Count("throttled") == 2 && j.Count(Handshake) == 1, "two refusals, then one handshake", "%d throttled, %d initialize", j.Count("throttled"), j.Count(Handshake))
})

var _ = Spec(Requirement{
	ID: "REMOTE-RETRYAFTER-003", Level: Must, Profile: driver.ProfileRemote, Area: "retry-after", Eras: Both,
	Statement: "An implementation MUST send a call that a remote server refused with 429 and Retry-After: 0 again at once, and only once: when that retry is refused too, the call MUST fail without the server seeing it a third time, and the server MUST stay usable for the next call.",
	Source:    Source{"issue 14", "honour Retry-After within the restart policy's bounds: the throttled request is sent again once"},
}, func(h *H) {
	// The handshake sends three POSTs in either era; the call is the
	// fourth and its retry the fifth, both refused; the next call is the
	// sixth.
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_THROTTLE_AT": "4", "MCP_FIXTURE_THROTTLE_COUNT": "2", "MCP_FIXTURE_RETRY_AFTER": "0"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr)}})
	h.Open("main")
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "refused twice"})
	j := h.AwaitJournal("fx", "throttled", 2)
	h.Verify(Journal, j.Count("throttled") == 2, "the call was sent again at once after Retry-After: 0 (no clock advance)", "%d throttled", j.Count("throttled"))
	h.Verify(Response, r.Error != nil || r.Result.IsError, "the call refused twice failed", "error=%v text=%q", r.Error, r.Result.Text)
	// Bound of the negative check: the next call's answer, which the
	// server sees after anything the first call could still send.
	r = h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "served"})
	j = h.AwaitJournal("fx", "call-start", 1)
	h.Verify(Response, r.Error == nil && strings.Contains(r.Result.Text, "served"), "the next call succeeded", "error=%v text=%q", r.Error, r.Result.Text)
	h.Verify(Journal, j.Count("throttled") == 2 && len(j.Where("received", "method", "tools/call")) == 3, "the refused call reached the server twice, the next once", "%d throttled, %d tools/call received", j.Count("throttled"), len(j.Where("received", "method", "tools/call")))
	h.Verify(Journal, j.Count("call-start") == 1, "only the next call ran", "%d call-start", j.Count("call-start"))
})

var _ = Spec(Requirement{
	ID: "REMOTE-REFUSED-001", Level: Must, Profile: driver.ProfileRemote, Area: "refused", Timing: true, Eras: Both,
	Statement: "An implementation MUST retry a remote server whose connections are refused on its restart policy's schedule and connect once it accepts them.",
	Source:    Source{"issue 14", "connection refused follows the restart policy"},
}, func(h *H) {
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_REFUSE_CONNECTIONS": "2"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr).With("restartDelays", []int64{1000, 2000})}, Options: &driver.StartOptions{StartupGateMs: Ms(0), LateRegistration: Bool(true)}})
	h.Open("main")
	h.AwaitJournal("fx", "connection-refused", 1)
	h.Await(Ev(event.RestartScheduled, "fx", "delay_ms", "1000"))
	h.Advance(1000)
	h.AwaitJournal("fx", "connection-refused", 2)
	h.Await(Ev(event.RestartScheduled, "fx", "delay_ms", "2000"))
	h.Advance(2000)
	j := h.AwaitJournal("fx", Handshake, 1)
	h.Verify(Journal, j.Count("connection-refused") == 2 && j.Count(Handshake) == 1, "two refused connects, then one handshake", "%d refused, %d initialize", j.Count("connection-refused"), j.Count(Handshake))
})

var _ = Spec(Requirement{
	ID: "REMOTE-LISTEN-001", Level: Should, Profile: driver.ProfileRemote, Area: "listen", Eras: Modern,
	Statement: "An implementation SHOULD, once it has re-opened a subscriptions/listen stream that broke (2026-07-28), list again, once each, the tools and the resources and prompts it follows: the list changes the server sent while no stream was open are lost.",
	Source:    Source{"issue 26", "subscriptions/listen with the same debounce and a reconnect policy for the listen stream"},
	Needs:     []driver.Capability{driver.CapHostHandlers},
}, func(h *H) {
	addr := h.HTTPFixture("fx", Knobs{"MCP_FIXTURE_LISTEN_END": "break", "MCP_FIXTURE_RESOURCES": "2", "MCP_FIXTURE_PROMPTS": "1"})
	h.Start(Setup{Servers: map[string]Server{"fx": remoteServer(addr).With("resources", true).With("prompts", true)}})
	h.Open("main")
	listens := func(j JournalEntries) int { return len(j.Where("received", "method", "subscriptions/listen")) }
	h.AwaitJournalFunc("fx", "the first listen stream cut and a second subscriptions/listen", func(j JournalEntries) bool {
		return j.Count("listen-ended") >= 1 && listens(j) >= 2
	})
	h.AwaitJournalFunc("fx", "the resources and prompts listed after connect", func(j JournalEntries) bool {
		return j.Count("resources-list") >= 1 && j.Count("prompts-list") >= 1
	})
	// The tools are listed again as after one tools/list_changed
	// (tools.changed); the refreshes wait for the list_changed debounce on
	// the clock. Every refresh's debounce is armed once tools.changed is
	// out, so one advance to the next timer fires them all; the lists then
	// travel over HTTP in real time, and the clock must not move again
	// while they do (a request timeout would cut them short).
	h.Await(Ev(event.ToolsChanged, "fx"))
	if p := h.Pending(); len(p) > 0 {
		h.Advance(max(p[0].Milliseconds(), 1))
	}
	h.AwaitJournal("fx", "tools-list", 2)
	h.AwaitJournal("fx", "resources-list", 2)
	h.AwaitJournal("fx", "prompts-list", 2)
	// Bound of the counts: the answer of a call made after the refreshes.
	r := h.CallNow("main", "mcp_fx_echo", map[string]any{"text": "after the re-open"})
	j := h.Journal("fx")
	h.Verify(Response, r.Error == nil && !r.Result.IsError, "a call answers after the re-open", "error=%v text=%q", r.Error, r.Result.Text)
	h.Verify(Journal, j.Count("tools-list") == 2, "the tools were listed again, once", "%d tools-list", j.Count("tools-list"))
	h.Verify(Journal, j.Count("resources-list") == 2 && j.Count("prompts-list") == 2, "the resources and prompts were listed again, once each",
		"%d resources-list, %d prompts-list (journal %v)", j.Count("resources-list"), j.Count("prompts-list"), kinds(j))
	h.Verify(Journal, listens(j) == 2, "one re-open", "%d subscriptions/listen", listens(j))
})
