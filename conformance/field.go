package conformance

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcplife/mcplife/conformance/driver"
	"github.com/mcplife/mcplife/internal/proctest"
	"github.com/onsi/ginkgo/v2"
)

// ProfileField is the field profile: what a user sees of a client when its
// servers crash, hang, exit, loop or misbehave, judged from outside. It is
// the harness's profile, not the driver protocol's: a driver never claims
// it (the protocol's profile vocabulary is closed) and every driver is
// judged on it, with no capability beyond tools.list, tool.call and
// shutdown. Its specs run the implementation on the real clock whatever
// clock the run uses, and their bounds are real seconds: the evidence is
// what any client shows (call outcomes and their latency, the fixture's
// journals, the process table), never the implementation's events.
const ProfileField driver.Profile = "field"

// fieldProfile documents the field profile beside the protocol's.
var fieldProfile = driver.ProfileInfo{
	Name:   ProfileField,
	Covers: "what a user sees when servers crash, hang, exit or misbehave, judged from outside on every driver",
}

// Profiles returns the suite's profiles in documentation order: the
// driver protocol's, which a driver claims, then the field profile, which
// every driver is judged on.
func Profiles() []driver.ProfileInfo {
	return append(driver.Profiles(), fieldProfile)
}

// claimed reports whether a requirement of profile p applies to a driver
// that announced hello: the field profile applies to every driver.
func claimed(hello *driver.HelloResult, p driver.Profile) bool {
	return p == ProfileField || hello.Claims(p)
}

// Measure records what a spec measured (a latency, a count, a rate) for
// its verdict: the report and the matrix cell show it beside pass or fail.
// It is called before the checks that judge the measurement, so a failing
// verdict shows it too.
func (h *H) Measure(format string, args ...any) {
	h.measured = append(h.measured, fmt.Sprintf(format, args...))
	ginkgo.AddReportEntry("measured", ginkgo.ReportEntryVisibilityNever, strings.Join(h.measured, "; "))
}

// goneWithin reports whether process pid is gone within d of real time.
func (h *H) goneWithin(pid int, d time.Duration) bool {
	ctx, cancel := h.boundCtx(max(d, 0))
	defer cancel()
	return proctest.WaitGone(ctx, pid) == nil
}
