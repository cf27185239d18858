package bridge

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Injection signal names reported by DetectInjection.
const (
	SignalIgnorePrevious       = "ignore-previous"
	SignalDisregardPrevious    = "disregard-previous"
	SignalFakeSystemRole       = "fake-system-role"
	SignalChatMLSystem         = "chatml-system"
	SignalBracketSystem        = "bracket-system"
	SignalNewInstructions      = "new-instructions"
	SignalClaimedAuthorization = "claimed-authorization"
	SignalModeSwitch           = "mode-switch"
)

type signalPattern struct {
	name string
	// need lists words every match contains (lowercase ASCII); the regexp
	// runs only when foldCase(text) contains all of them.
	need []string
	re   *regexp.Regexp
}

// signalPatterns compiles the patterns once, on first use. The slice is
// never written after that.
var signalPatterns = sync.OnceValue(func() []signalPattern {
	def := []struct {
		name string
		need []string
		expr string
	}{
		// "ignore previous instructions", "ignore all the prior context", ...
		{SignalIgnorePrevious, []string{"ignore"}, `\bignore\s+(?:all\s+)?(?:the\s+)?(?:previous|prior|above)\s+(?:instructions?|context|rules?)\b`},
		// "disregard all previous", "disregard the above"
		{SignalDisregardPrevious, []string{"disregard"}, `\bdisregard\s+(?:all\s+)?(?:the\s+)?(?:previous|prior|above)\b`},
		// "SYSTEM: you are ...", "system: ignore ..."
		{SignalFakeSystemRole, []string{"system", ":"}, `\bsystem\s*:\s*(?:you|ignore|disregard)\b`},
		// ChatML role header.
		{SignalChatMLSystem, []string{"<|im_start|>", "system"}, `<\|im_start\|>\s*system`},
		{SignalBracketSystem, []string{"[system]"}, `\[system\]`},
		{SignalNewInstructions, []string{"new", "instructions", ":"}, `\bnew\s+instructions\s*:`},
		// "the user has authorized you", "... granted you", "... allowed you"
		{SignalClaimedAuthorization, []string{"user", "has", "you"}, `\bthe\s+user\s+has\s+(?:authori[sz]ed|granted|allowed)\s+you\b`},
		// "you are now in developer mode", "you are now a jailbroken mode ..."
		{SignalModeSwitch, []string{"you", "now", "mode"}, `\byou\s+are\s+now\s+(?:in|an?)\s+[^\n.]{0,40}?\bmode\b`},
	}
	out := make([]signalPattern, len(def))
	for i, d := range def {
		out[i] = signalPattern{d.name, d.need, regexp.MustCompile(`(?i)` + d.expr)}
	}
	return out
})

// SignalNames returns every signal name DetectInjection can report, in the
// order it reports them.
func SignalNames() []string {
	ps := signalPatterns()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.name
	}
	return out
}

// DetectInjection scans text for common indirect-prompt-injection phrasings
// and returns the names of the signals found (see the Signal constants), in
// a fixed order, or nil. Matching is case-insensitive. Detection is advisory:
// it never blocks and never changes the content.
func DetectInjection(text string) []string {
	folded := foldCase(text)
	var out []string
	for _, p := range signalPatterns() {
		if containsAll(folded, p.need) && p.re.MatchString(text) {
			out = append(out, p.name)
		}
	}
	return out
}

func containsAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// foldCase maps every rune that (?i) matching equates with an ASCII letter
// to that lowercase letter: A-Z, and the two non-ASCII members of ASCII fold
// orbits, U+017F (long s) and U+212A (Kelvin sign). Other runes are kept, so
// a keyword present in a match is present in the folded text.
func foldCase(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return foldCaseRunes(s)
		}
	}
	// ASCII only: strings.ToLower maps exactly A-Z, and returns s itself
	// when there is nothing to map.
	return strings.ToLower(s)
}

// foldCaseRunes is foldCase for text that holds a non-ASCII byte.
func foldCaseRunes(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		case r == '\u017f':
			return 's'
		case r == '\u212a':
			return 'k'
		}
		return r
	}, s)
}
