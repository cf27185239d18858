package drivertest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/conformance/driver"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestServeCanned(t *testing.T) {
	in := strings.NewReader(`{"id":1,"method":"hello","params":{}}` + "\n" +
		"garbage\n" +
		`{"id":2,"method":"status"}` + "\n" +
		`{"id":3,"method":"shutdown"}` + "\n" +
		`{"id":4,"method":"status"}` + "\n")
	var out bytes.Buffer
	if err := ServeCanned(in, &out, OtherVersion()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d responses, want 3 (stops at shutdown):\n%s", len(lines), out.String())
	}
	var hello struct {
		Result driver.HelloResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &hello); err != nil || hello.Result.Protocol != "mcplife-driver/0" {
		t.Fatalf("hello response %s (%v)", lines[0], err)
	}
	if !strings.Contains(lines[1], `"id":2`) || !strings.Contains(lines[1], `"result":{}`) {
		t.Fatalf("status response %s", lines[1])
	}
}

func TestServeFunc(t *testing.T) {
	in := strings.NewReader(`{"id":1,"method":"hello"}` + "\n" + "garbage\n" + `{"id":2,"method":"shutdown"}` + "\n" + `{"id":3,"method":"status"}` + "\n")
	var out bytes.Buffer
	err := ServeFunc(in, &out, func(req driver.Request) []string {
		if req.Method == driver.MethodHello {
			return []string{"not json", Response(req.ID, `{"x":1}`)}
		}
		return []string{Response(req.ID, `{}`)}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "not json\n" + `{"type":"response","id":1,"result":{"x":1}}` + "\n" + `{"type":"response","id":2,"result":{}}` + "\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}
