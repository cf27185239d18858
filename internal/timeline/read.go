package timeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mcplife/mcplife/runtime/event"
)

// ReadEvents reads the events of a trace: either JSON lines, one event per
// line as event.WriteJSONL writes them, or one JSON object whose "events"
// member is an array of events (a recorded trace). Errors name the line.
func ReadEvents(r io.Reader) ([]event.Event, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("no events: the file is empty")
	}
	// A single JSON object with an "events" array.
	if trimmed[0] == '{' {
		var doc struct {
			Events *[]event.Event `json:"events"`
		}
		if err := json.Unmarshal(trimmed, &doc); err == nil && doc.Events != nil {
			return *doc.Events, nil
		}
		// Otherwise it may be JSON lines: fall through.
	}
	var evs []event.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var e event.Event
		if err := json.Unmarshal([]byte(text), &e); err != nil {
			return nil, fmt.Errorf("line %d: not an event: %w", line, err)
		}
		if e.Kind == "" {
			return nil, fmt.Errorf(`line %d: not an event: no "kind" (a trace object needs an "events" array)`, line)
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return evs, nil
}
