// Package drivertest provides stand-in drivers for testing harnesses that
// speak the driver protocol (docs/DRIVER.md).
package drivertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mcplife/mcplife/conformance/driver"
)

// ServeCanned answers hello with hello and every other request with {},
// until a shutdown request or the end of in. With a hello of another
// protocol version it is a driver the harness must reject.
func ServeCanned(in io.Reader, out io.Writer, hello driver.HelloResult) error {
	helloJSON, err := json.Marshal(hello)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var req driver.Request
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		result := json.RawMessage(`{}`)
		if req.Method == driver.MethodHello {
			result = helloJSON
		}
		if err := enc.Encode(driver.Response{Type: driver.TypeResponse, ID: &req.ID, Result: result}); err != nil {
			return err
		}
		if req.Method == driver.MethodShutdown {
			return nil
		}
	}
	return sc.Err()
}

// ServeFunc is a scripted stand-in driver: for each request line it writes
// the lines answer returns (each followed by a newline, written as given, so
// they may be deliberately malformed), until a shutdown request has been
// answered or in ends. Lines that are not JSON requests are ignored. It
// lets tests build drivers that break the protocol in a chosen way.
func ServeFunc(in io.Reader, out io.Writer, answer func(req driver.Request) []string) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var req driver.Request
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		for _, l := range answer(req) {
			if _, err := io.WriteString(out, l+"\n"); err != nil {
				return err
			}
		}
		if req.Method == driver.MethodShutdown {
			return nil
		}
	}
	return sc.Err()
}

// Response returns the line of a response to id with result (any JSON).
func Response(id int64, result string) string {
	return fmt.Sprintf(`{"type":"response","id":%d,"result":%s}`, id, result)
}

// OtherVersion is a hello of protocol version mcplife-driver/0, which no
// current harness accepts.
func OtherVersion() driver.HelloResult {
	return driver.HelloResult{
		Protocol:       "mcplife-driver/0",
		Implementation: driver.Implementation{Name: "fake", Version: "0"},
		Capabilities:   []driver.Capability{},
		Profiles:       []driver.Profile{},
	}
}
