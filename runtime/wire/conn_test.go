package wire

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipes is a fake stdio server's side of a Transport.
type pipes struct {
	stdoutW *io.PipeWriter // what the server writes
	stdinR  *io.PipeReader // what the client wrote
	tr      *Transport
}

func newPipes(opts Options) *pipes {
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	return &pipes{stdoutW: outW, stdinR: inR, tr: &Transport{Stdout: NewReader(outR, opts), Stdin: inW}}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestTransportWithGoSDK: a go-sdk client over a Transport talks to a go-sdk
// server over go-sdk's own IOTransport: initialize, a tool call, a
// list_changed the client's handler sees, and a clean close.
func TestTransportWithGoSDK(t *testing.T) {
	ctx := testContext(t)
	p := newPipes(Options{MaxMessageBytes: DefaultMaxMessageBytes})
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	ss, err := server.Connect(ctx, &mcp.IOTransport{Reader: p.stdinR, Writer: p.stdoutW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, p.tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": strings.Repeat("x", 100000)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; len(got) != 100000 {
		t.Errorf("echo returned %d bytes", len(got))
	}
	mcp.AddTool(server, &mcp.Tool{Name: "second"}, func(context.Context, *mcp.CallToolRequest, args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the client never saw tools/list_changed")
	}
	if err := cs.Close(); err != nil {
		t.Errorf("client close: %v", err)
	}
	if err := ss.Wait(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("server ended with %v", err)
	}
}

// TestConnReadsBatchesAndFails: a batch is delivered message by message, a
// message go-sdk refuses ends reading with its error (again on every later
// Read), and writes are one line each.
func TestConnReadsBatchesAndFails(t *testing.T) {
	ctx := testContext(t)
	p := newPipes(Options{})
	c, err := p.tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		io.WriteString(p.stdoutW, "banner\n"+`[{"jsonrpc":"2.0","method":"notifications/message","params":{}},{"jsonrpc":"2.0","id":3,"result":{}}]`+"\n"+`{"jsonrpc":"1.0","id":4,"result":{}}`+"\n")
	}()
	m1, err := c.Read(ctx)
	if req, ok := m1.(*jsonrpc.Request); err != nil || !ok || req.Method != "notifications/message" {
		t.Fatalf("first of the batch: %v, %v", m1, err)
	}
	m2, err := c.Read(ctx)
	if resp, ok := m2.(*jsonrpc.Response); err != nil || !ok || resp.ID.Raw() != int64(3) {
		t.Fatalf("second of the batch: %#v, %v", m2, err)
	}
	if q := c.(*conn).queue; q != nil {
		t.Errorf("the batch's slice is still held (cap %d): it keeps its messages reachable", cap(q))
	}
	_, err = c.Read(ctx)
	if err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("a wrong version tag read as %v", err)
	}
	if _, err2 := c.Read(ctx); err2 != err {
		t.Errorf("later read %v, want the same error", err2)
	}

	var got string
	var wg sync.WaitGroup
	wg.Go(func() {
		b := make([]byte, 200)
		n, _ := io.ReadAtLeast(p.stdinR, b, 10)
		got = string(b[:n])
	})
	id, _ := jsonrpc.MakeID(float64(9))
	if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: "ping"}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got != `{"jsonrpc":"2.0","id":9,"method":"ping"}`+"\n" {
		t.Errorf("wrote %q", got)
	}
}

// TestConnEndOfStdout: stdout ending between messages reads as io.EOF,
// within one as io.ErrUnexpectedEOF; a closed connection reads io.EOF and
// closes both pipes.
func TestConnEndOfStdout(t *testing.T) {
	ctx := testContext(t)
	for _, tc := range []struct {
		out  string
		want error
	}{
		{`{"jsonrpc":"2.0","method":"x"}` + "\n", io.EOF},
		{`{"jsonrpc":"2.0","meth`, io.ErrUnexpectedEOF},
	} {
		p := newPipes(Options{})
		c, _ := p.tr.Connect(ctx)
		go func() {
			io.WriteString(p.stdoutW, tc.out)
			p.stdoutW.Close()
		}()
		var err error
		for err == nil {
			_, err = c.Read(ctx)
			if q := c.(*conn).queue; q != nil {
				t.Errorf("a single message left a queue of cap %d: it keeps the message reachable", cap(q))
			}
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%q: read %v, want %v", tc.out, err, tc.want)
		}
		c.Close()
	}

	p := newPipes(Options{})
	c, _ := p.tr.Connect(ctx)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("read after close: %v", err)
	}
	if _, err := p.stdoutW.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("stdout still open after Close: %v", err)
	}
	if _, err := p.stdinR.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("stdin still open after Close: %v", err)
	}
}

// TestNextShrinksAfterBigMessage: the buffer a big message grew is let go,
// and the limit and absorption hold for Next as for Read.
func TestNextShrinksAfterBigMessage(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":1,"result":{"t":"` + strings.Repeat("b", 2<<20) + `"}}`
	in := big + "\n" + toolsChanged + "\n" + `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"
	g := NewReader(strings.NewReader(in), Options{MaxMessageBytes: 4 << 20, Absorb: func(string) bool { return true }})
	m, err := g.Next()
	if err != nil || string(m) != big {
		t.Fatalf("big message: %d bytes, %v", len(m), err)
	}
	if g.msg != nil {
		t.Errorf("kept a %d-byte buffer after the big message", cap(g.msg))
	}
	m, err = g.Next()
	if err != nil || string(m) != `{"jsonrpc":"2.0","id":2,"result":{}}` || g.Absorbed() != 1 {
		t.Fatalf("after the absorbed notification: %q, %v, absorbed %d", m, err, g.Absorbed())
	}
	if _, err := g.Next(); err != io.EOF {
		t.Errorf("end: %v", err)
	}
	small := NewReader(strings.NewReader(big), Options{MaxMessageBytes: 1 << 20})
	if _, err := small.Next(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
}
