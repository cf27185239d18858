package event

// The vocabulary of the host-side handlers: what the runtime does when a
// server asks the host for a completion (sampling), for its roots, reports
// progress, or publishes resources and prompts. docs/LIFECYCLE.md
// ("Host-side handlers") states the rule behind each.
const (
	SamplingAnswered Kind = "sampling.answered"
	RootsListed      Kind = "roots.listed"
	RootsChanged     Kind = "roots.changed"
	ToolProgress     Kind = "tool.progress"
	ResourcesListed  Kind = "resources.listed"
	ResourcesChanged Kind = "resources.changed"
	PromptsListed    Kind = "prompts.listed"
	PromptsChanged   Kind = "prompts.changed"
)

// handlerKinds documents the host-side handler vocabulary, in documentation
// order.
func handlerKinds() []KindInfo {
	return []KindInfo{
		{SamplingAnswered, "the server asked the host for a completion (sampling/createMessage): the host's sampling callback answered, failed, or the request was refused because sampling is off for the server or the host has no callback", "outcome, messages, model, error"},
		{RootsListed, "the server asked for the host's roots (roots/list) and got the roots configured for it", "roots"},
		{RootsChanged, "the host changed a server's roots; notifications/roots/list_changed was sent to the connected server", "roots"},
		{ToolProgress, "a server sent notifications/progress for a tool call that carried a progress token (servers with \"progress\": true)", "call, tool, progress, total, text"},
		{ResourcesListed, "the server's resources were listed (after connect or a resources/list_changed); a failed listing keeps the previous list and says why in error", "resources, truncated, error"},
		{ResourcesChanged, "the server sent notifications/resources/list_changed; the debounce timer is armed", "debounce_ms"},
		{PromptsListed, "the server's prompts were listed (after connect or a prompts/list_changed); a failed listing keeps the previous list and says why in error", "prompts, truncated, error"},
		{PromptsChanged, "the server sent notifications/prompts/list_changed; the debounce timer is armed", "debounce_ms"},
	}
}
