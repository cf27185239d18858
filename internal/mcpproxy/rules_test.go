package mcpproxy

import (
	"slices"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rule
	}{
		{"hang=*", Rule{Action: Hang, Method: "*"}},
		{"hang=tools/call:test", Rule{Action: Hang, Method: "tools/call", Tool: "test"}},
		{"delay=tool:echo,ms=20", Rule{Action: Delay, Method: "tools/call", Tool: "echo", MS: 20}},
		{"error=initialize", Rule{Action: Error, Method: "initialize", Code: -32603, Message: DefaultErrorMessage}},
		{"error=ping,code=-1,message=a, b", Rule{Action: Error, Method: "ping", Code: -1, Message: "a, b"}},
		{"ping=drop", Rule{Action: Hang, Method: "ping"}},
		{"ping=error", Rule{Action: Error, Method: "ping", Code: -32601, Message: "Method not found"}},
		{"exit-after=calls:3", Rule{Action: Exit, Method: "tools/call", OnReply: true, After: 3}},
		{"exit-after=tools-list", Rule{Action: Exit, Method: "tools/list", OnReply: true, Times: 1}},
		{"exit-after=initialized", Rule{Action: Exit, Method: "notifications/initialized"}},
		{"exit-after=initialize-request", Rule{Action: Exit, Method: MatchOpen}},
		{"exit-after=discover", Rule{Action: Exit, Method: "server/discover", OnReply: true, Times: 1}},
		{"exit-after=discover,code=4", Rule{Action: Exit, Method: "server/discover", OnReply: true, Times: 1, Code: 4}},
		{"hang=open", Rule{Action: Hang, Method: MatchOpen}},
		{"error=server/discover,code=-32601", Rule{Action: Error, Method: "server/discover", Code: -32601, Message: DefaultErrorMessage}},
		{"exit-delay=50,code=7", Rule{Action: Exit, MS: 50, Code: 7}},
		{"fail-init", Rule{Action: Exit, Method: MatchOpen, Code: 5}},
		{"fail-init=7", Rule{Action: Exit, Method: MatchOpen, Code: 7}},
		{"exit=tool:x,on=reply,times=1", Rule{Action: Exit, Method: "tools/call", Tool: "x", OnReply: true, Times: 1}},
		{"drop=*", Rule{Action: Drop, Method: "*"}},
	} {
		got, err := ParseRule(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		tc.want.Text = tc.in
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseRuleErrors(t *testing.T) {
	for in, want := range map[string]string{
		"hang":             "needs a match",
		"frob=*":           "unknown action",
		"delay=ping":       "delay needs ms",
		"delay=ping,ms=x":  "not an integer",
		"ping=maybe":       "ping takes",
		"exit-after=never": "exit-after takes",
		"hang=*,on=reply":  "on=reply",
		"hang=*,bogus=1":   "unknown key",
	} {
		_, err := ParseRule(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), in) {
			t.Errorf("%s: error %v, want one naming the rule and containing %q", in, err, want)
		}
	}
	if _, err := ParseRules("# c\nhang=*\n\nfrob=1\n"); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("ParseRules: %v, want an error naming line 4", err)
	}
}

func TestRuleCounters(t *testing.T) {
	var s ruleSet
	r, _ := ParseRule("error=tools/call,after=2,times=1")
	s.set([]Rule{r}, false)
	var applied []bool
	for range 4 {
		_, ok := s.match("tools/call", "x", false)
		applied = append(applied, ok)
	}
	if want := []bool{false, true, false, false}; !equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}
}

func equal(a, b []bool) bool { return slices.Equal(a, b) }
