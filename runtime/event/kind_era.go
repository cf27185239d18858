package event

// ServerProtocolFallback is the one event of the two protocol eras (issue
// 26): a connect try met a server of the other era and the attempt goes on
// with the version that server speaks. docs/LIFECYCLE.md ("Protocol eras")
// states the rules.
const ServerProtocolFallback Kind = "server.protocol_fallback"

// eraKind documents ServerProtocolFallback.
func eraKind() KindInfo {
	return KindInfo{ServerProtocolFallback, "a connect met a server of the other protocol era; the server is remembered to speak protocol, which later attempts ask first. reason: discover-unanswered (a stdio server left server/discover unanswered for the probe timeout, as a handshake-era server that ignores unknown methods does: the runtime answers it method-not-found itself and the handshake goes on in the same process), discover-refused (an http server answered server/discover without the stateless revision: an HTTP error such as 400, 404 or 405, a JSON-RPC error, or versions without 2026-07-28; go-sdk went on with initialize on the same connection) or initialize-refused (a server refused the initialize of the try, either a modern-only server with UnsupportedProtocolVersionError naming protocol, or a server of both eras that answered server/discover itself only after the probe timeout and then refused the initialize that followed as a duplicate: the try's process is stopped and a new connection asks protocol, its server/discover no longer bounded by the probe timeout)", "protocol, reason"}
}
