package event

// The vocabulary of remote (http and sse) servers: what the runtime does when
// a server forgets the session, drops a response stream, rejects the
// credential, throttles or cannot be reached, and what differs for a
// stateless (2026-07-28) server. docs/LIFECYCLE.md ("Remote
// servers") states the rule behind each.
const (
	RemoteSessionExpired       Kind = "remote.session_expired"
	RemoteSessionReinitialized Kind = "remote.session_reinitialized"
	RemoteSessionReinitFailed  Kind = "remote.session_reinit_failed"
	RemoteRequestRetried       Kind = "remote.request_retried"
	RemoteStreamDropped        Kind = "remote.stream_dropped"
	RemoteStreamResumed        Kind = "remote.stream_resumed"
	RemoteStreamResumeFailed   Kind = "remote.stream_resume_failed"
	RemoteAuthRejected         Kind = "remote.auth_rejected"
	RemoteAuthRefreshed        Kind = "remote.auth_refreshed"
	RemoteAuthRequired         Kind = "remote.auth_required"
	RemoteAuthDiscovered       Kind = "remote.auth_discovered"
	RemoteAuthRegistered       Kind = "remote.auth_registered"
	RemoteAuthAuthorizing      Kind = "remote.auth_authorizing"
	RemoteAuthTokenObtained    Kind = "remote.auth_token_obtained"
	RemoteAuthFailed           Kind = "remote.auth_failed"
	RemoteThrottled            Kind = "remote.throttled"
	RemoteUnreachable          Kind = "remote.unreachable"

	// The stateless revision (2026-07-28) over streamable HTTP: no
	// session to expire, no stream to resume.
	RemoteNotFound        Kind = "remote.not_found"
	RemoteStreamLost      Kind = "remote.stream_lost"
	RemoteRequestReissued Kind = "remote.request_reissued"
	RemoteReissueFailed   Kind = "remote.reissue_failed"

	// The subscriptions/listen stream of a stateless connection: its end,
	// its re-opening, and giving up on it.
	RemoteListenLost         Kind = "remote.listen_lost"
	RemoteListenReopened     Kind = "remote.listen_reopened"
	RemoteListenReopenFailed Kind = "remote.listen_reopen_failed"
	RemoteListenGaveUp       Kind = "remote.listen_gave_up"
)

// remoteKinds documents the remote vocabulary, in documentation order.
func remoteKinds() []KindInfo {
	return []KindInfo{
		{RemoteSessionExpired, "the server answered 404 for the connection's MCP session; the connection ends and one re-initialization starts at once", "method"},
		{RemoteSessionReinitialized, "a new session (initialize + tools/list) replaced the expired one", "tools"},
		{RemoteSessionReinitFailed, "the re-initialization failed, or the new session expired again within the stability window; the restart policy takes over (restart.* reason init-failure when the re-initialization failed, transport-exit when the session expired again)", "error"},
		{RemoteRequestRetried, "a request was sent again: on the new session after an expiry (session-expired), after Retry-After (retry-after), with a refreshed credential (auth-refreshed), with the token of an OAuth flow (authorized), or at once after a stateless server's 404 (not-found)", "method, reason"},
		{RemoteStreamDropped, "the SSE response stream of a request in flight ended before its answer, after an event id; the resume GET waits retry_ms on the clock", "method, last_event_id, retry_ms"},
		{RemoteStreamResumed, "a GET with Last-Event-ID resumed the dropped stream", "last_event_id"},
		{RemoteStreamResumeFailed, "the resume GET failed; the request fails and the connection ends", "last_event_id, error"},
		{RemoteAuthRejected, "the server answered 401 or 403", "status, method"},
		{RemoteAuthRefreshed, "the credential provider returned a new token after a rejection; the request is sent again with it", "credential"},
		{RemoteAuthDiscovered, "an OAuth flow (auth.grant) fetched a metadata document: the protected resource's (RFC 9728) or its authorization server's (RFC 8414 / OpenID)", "document, url"},
		{RemoteAuthRegistered, "the flow registered the client dynamically (RFC 7591) at the authorization server's registration endpoint", "url"},
		{RemoteAuthAuthorizing, "the authorization-code flow handed the authorization URL to the host's authorize callback (the user agent step); PKCE S256", "client, scope"},
		{RemoteAuthTokenObtained, "the token endpoint issued an access token (never in the event); the request that met 401/403 is sent again with it", "grant, scope, expires_in_ms, refresh"},
		{RemoteAuthFailed, "the OAuth flow failed (discovery, registration, the authorize callback, the token request) or cannot run (no authorize callback); remote.auth_required follows", "grant, error"},
		{RemoteAuthRequired, "the credential was rejected and could not be refreshed (or was rejected again); the server is in state needs-auth and is not restarted", "status, error"},
		{RemoteThrottled, "the server answered 429 or 503 with Retry-After; the request is sent again once after delay_ms (Retry-After capped by the restart policy's longest delay)", "status, method, retry_after_ms, delay_ms"},
		{RemoteUnreachable, "a request could not reach the server (connection refused or reset); connect failures follow the restart policy", "method, reason, error"},
		{RemoteNotFound, "a stateless (2026-07-28) server answered 404 without a JSON-RPC error: no MCP endpoint served the request (an instance behind a load balancer that does not serve it), which is no lost session; the request is sent again once at once (remote.request_retried reason not-found), a second 404 fails it alone", "method"},
		{RemoteStreamLost, "the SSE response stream of a request on a stateless (2026-07-28) connection ended before its answer; the revision has no Last-Event-ID resumption, so the request is re-issued once (remote.request_reissued), or fails when it was re-issued already", "method"},
		{RemoteRequestReissued, "a request whose response stream was lost was sent again as a new request with a new id (2026-07-28); its answer is handed to the waiting caller", "method"},
		{RemoteReissueFailed, "the re-issued request could not be sent or was not answered with a stream or JSON body; the request fails, the connection stays", "method, error"},
		{RemoteListenLost, "the subscriptions/listen stream of a stateless (2026-07-28) connection ended: closed (the server answered the listen request, a graceful end) or broken (no answer: an abrupt drop); the runtime re-opens it after delay_ms on the clock, and a re-open that cannot reach the server ends the connection as a transport exit", "reason, delay_ms"},
		{RemoteListenReopened, "a new subscriptions/listen request re-opened the stream (attempt counts the re-opens since the last stream that stayed open for the stability window); the tools are listed again, as after one tools/list_changed, since notifications sent while no stream was open are lost", "attempt"},
		{RemoteListenReopenFailed, "a re-open reached the server but got no stream (an HTTP error or a JSON-RPC error); the next re-open waits next_delay_ms, absent when the runtime gives up", "attempt, error, next_delay_ms"},
		{RemoteListenGaveUp, "the server's restart policy has no delay left for another re-open, or five re-opens in a row failed or ended early: the connection goes on without a listen stream (no list-change notifications; a server that goes away is noticed at the next request or idle probe)", "attempts"},
	}
}
