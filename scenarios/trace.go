package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/mcplife/mcplife/runtime/event"
)

// droppedAttrs are event attributes left out of normalized traces: they carry
// process ids, paths of executables, error texts and exit statuses, which
// vary from run to run or from machine to machine, or implementation-chosen
// call ids.
var droppedAttrs = map[string]bool{
	"pid":     true,
	"command": true,
	"error":   true,
	"stderr":  true,
	"status":  true,
	"call":    true,
	"message": true,
}

// TraceFilter selects the events of a normalized trace.
type TraceFilter struct {
	// Kinds are kind patterns: "restart.scheduled", or "restart.*" for a
	// whole family. Empty selects every kind.
	Kinds []string
	// Server and Session, when not "", select events of that server or
	// session.
	Server, Session string
	// After leaves out events with seq <= After.
	After uint64
	// Drop leaves out more attributes, for values the scenario does not
	// determine.
	Drop []string
}

func (f TraceFilter) match(e event.Event) bool {
	if e.Seq <= f.After {
		return false
	}
	if f.Server != "" && e.Server != f.Server {
		return false
	}
	if f.Session != "" && e.Session != f.Session {
		return false
	}
	if len(f.Kinds) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if p, ok := strings.CutSuffix(k, "*"); ok {
			if strings.HasPrefix(string(e.Kind), p) {
				return true
			}
		} else if string(e.Kind) == k {
			return true
		}
	}
	return false
}

// NormalizeEvent renders one event as a line of a normalized trace: the
// virtual offset, the kind, server and session, and the sorted attributes
// without those that vary between runs (pid, command, error, stderr,
// status, call, message) and without drop. work, when not "", is replaced
// by $WORK.
func NormalizeEvent(e event.Event, work string, drop ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", formatOffset(e.At.Milliseconds()), e.Kind)
	if e.Server != "" {
		fmt.Fprintf(&b, " server=%s", quoteIfNeeded(e.Server))
	}
	if e.Session != "" {
		fmt.Fprintf(&b, " session=%s", quoteIfNeeded(e.Session))
	}
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		if !droppedAttrs[k] && !slices.Contains(drop, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fieldString(e.Attrs[k])
		if work != "" {
			v = strings.ReplaceAll(v, work, "$WORK")
		}
		fmt.Fprintf(&b, " %s=%s", k, quoteIfNeeded(v))
	}
	return b.String()
}

func quoteIfNeeded(v string) string {
	if strings.ContainsAny(v, " \t\n\"") || v == "" {
		return strconv.Quote(v)
	}
	return v
}

// NormalizeTrace renders the events f selects, one line each.
func NormalizeTrace(evs []event.Event, f TraceFilter, work string) string {
	var b strings.Builder
	for _, e := range evs {
		if f.match(e) {
			b.WriteString(NormalizeEvent(e, work, f.Drop...))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// formatOffset renders milliseconds as "+12.345s".
func formatOffset(ms int64) string {
	return fmt.Sprintf("+%d.%03ds", ms/1000, ms%1000)
}

// fieldString formats an attribute or journal field: whole numbers without
// exponent, everything else with fmt.
func fieldString(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// writeUpdates rewrites golden sections of the script name in the run's
// script directory.
func (rc *runConfig) writeUpdates(name string, updates map[string]string) error {
	rc.updateMu.Lock()
	defer rc.updateMu.Unlock()
	file := filepath.Join(rc.dir, name+".txtar")
	a, err := txtar.ParseFile(file)
	if err != nil {
		return fmt.Errorf("updating golden sections: %v", err)
	}
	for section, content := range updates {
		found := false
		for i := range a.Files {
			if a.Files[i].Name == section {
				a.Files[i].Data = []byte(content)
				found = true
			}
		}
		if !found {
			a.Files = append(a.Files, txtar.File{Name: section, Data: []byte(content)})
		}
	}
	return os.WriteFile(file, txtar.Format(a), 0o644)
}
