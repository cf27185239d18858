package event

// ServerProtocolFallback is the one event of the two protocol eras (issue
// 26): a connect try met a server of the other era and the attempt goes on
// with the version that server speaks. docs/LIFECYCLE.md ("Protocol eras")
// states the rules.
const ServerProtocolFallback Kind = "server.protocol_fallback"

// eraKind documents ServerProtocolFallback.
func eraKind() KindInfo {
	return KindInfo{ServerProtocolFallback, "a connect try met a server of the other protocol era and stopped; the attempt goes on at once, in a new process for stdio, asking for protocol, which the server is remembered to speak. reason: discover-unanswered (a modern-first try whose server/discover got no reply within the probe timeout: a handshake-era server that ignores unknown methods) or initialize-refused (a handshake try that a modern-only server refused with UnsupportedProtocolVersionError naming protocol)", "protocol, reason"}
}
