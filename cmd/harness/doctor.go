package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/internal/doctor"
	"github.com/mcplife/mcplife/internal/textsafe"
	"github.com/mcplife/mcplife/runtime/event"
)

const doctorUsage = `usage: harness doctor [-config FILE ...] [-trust] [-json] [-watch [-probe-interval D]] [-events FILE] [flags]

Connects every configured MCP server through the reference runtime and
prints one table: name, status, transport, tool count, connect time, trust
decision and source file (level), with the details of each server under
it: validation problems as file:line:col: field: message, the definitions
it shadows, tool name collisions, and the error and last stderr lines of a
server that failed. One broken server never hides the others.

Without -config, the servers come from the runtime's discovery rules
(docs/LIFECYCLE.md, runtime/config): project files under -dir (default:
the current directory) and user files under -home (default: your home).
With -config, only the files given are read, as user-level config.

-watch keeps the servers up after the table and streams their lifecycle
events (exits, restarts, backoff, probes, tool list changes) until
interrupted (Ctrl-C), then stops them all. While watching, every connected
server with no call in flight gets a health probe every -probe-interval
(ping, then tools/list), so a server wedged while idle shows up and is
restarted; probes that find it healthy are not shown. To retry a failed
server now instead of at its next backoff slot (a server you just
restarted), press Enter on the terminal, or send the harness SIGUSR1
(kill -USR1 PID). -events FILE saves every lifecycle event for harness
timeline FILE, creating its directory.

Exit status: 0 when every server connected (or is disabled or blocked), 1
when a server failed or was rejected or a config file is broken, 2 for bad
usage.

flags:
`

// runDoctor implements `harness doctor`; SIGINT or SIGTERM ends -watch,
// Enter on a terminal and SIGUSR1 retry the failed servers now.
func runDoctor(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A closed stdout (harness doctor -watch | head) must end the watch
	// and stop the servers, not kill the harness with SIGPIPE.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	retry := make(chan os.Signal, 1)
	signal.Notify(retry, syscall.SIGUSR1)
	defer signal.Stop(retry)
	var keys io.Reader
	if stdinIsTerminal() {
		keys = os.Stdin // Enter retries
	}
	return runDoctorContext(ctx, args, doctorInput{keys: keys, retry: retry}, stdout, stderr)
}

// stdinIsTerminal reports whether stdin is a character device other than
// /dev/null (what a background job or CI gets): a terminal, where Enter
// can be pressed.
func stdinIsTerminal() bool {
	st, err := os.Stdin.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}

// doctorInput is what asks harness doctor -watch to retry the failed
// servers now: a line on keys (Enter on a terminal) or a signal on retry
// (SIGUSR1). Either may be nil.
type doctorInput struct {
	keys  io.Reader
	retry <-chan os.Signal
}

// runDoctorContext is runDoctor with the context that ends -watch and the
// input that asks for retries.
func runDoctorContext(ctx context.Context, args []string, in doctorInput, stdout, stderr io.Writer) int {
	fs := newFlags("doctor", doctorUsage, stdout, stderr)
	var files multiFlag
	fs.Var(&files, "config", "check this config `FILE` instead of discovering (repeatable; earlier files win)")
	dir := fs.String("dir", "", "project directory for discovery (default: the current directory)")
	home := fs.String("home", "", "home directory for user-level discovery (default: $HOME)")
	trust := fs.Bool("trust", false, "trust the workspace: connect project-level stdio servers too")
	asJSON := fs.Bool("json", false, "print the report as JSON (schema "+doctor.Schema+"); with -watch, then one event per line")
	watch := fs.Bool("watch", false, "keep the servers up and stream lifecycle events until interrupted")
	timeout := fs.Duration("timeout", 0, "connect timeout of every server (default: each server's, 30s)")
	width := fs.Int("width", 0, "terminal width (default: $COLUMNS, else 100)")
	stderrLines := fs.Int("stderr-lines", 5, "stderr lines shown for a failed server")
	eventsFile := fs.String("events", "", "write every lifecycle event to `FILE` (JSON lines) when done, for harness timeline")
	probeEvery := fs.Duration("probe-interval", 30*time.Second, "with -watch, health-probe every idle connected server this often, so a wedged one shows up (0: only after a tool timeout)")
	probeTimeout := fs.Duration("probe-timeout", 0, "timeout of each health probe step (default: the runtime's, 3s)")
	if code := fs.parse(args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return fs.unexpected("config files go after -config")
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			fmt.Fprintf(stderr, "harness doctor: -config %s: %v\n", f, err)
			return 2
		}
		if st.IsDir() {
			fmt.Fprintf(stderr, "harness doctor: -config %s: is a directory, want a JSON config file\n", f)
			return 2
		}
	}
	cwd, _ := os.Getwd()
	if *dir == "" {
		*dir = cwd
	}
	homeDir := *home
	if homeDir == "" {
		homeDir, _ = os.UserHomeDir()
	}
	w := *width
	if w <= 0 {
		if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
			w = c
		}
	}
	opts := doctor.Options{Files: files, ProjectDir: *dir, HomeDir: homeDir, Trusted: *trust,
		ConnectTimeout: *timeout, StderrLines: *stderrLines, ProbeTimeout: *probeTimeout}
	if *watch && *probeEvery > 0 {
		opts.IdleProbeInterval = *probeEvery
	}
	if !*asJSON {
		fmt.Fprintln(stderr, "harness doctor: connecting the configured servers...")
	}
	d, err := doctor.Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "harness doctor: %s\n", textsafe.Line(err.Error()))
		return 2
	}
	closed := false
	closeAll := func() {
		if closed {
			return
		}
		closed = true
		// Stop every server; a hung one is killed after the stop grace.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		d.Close(cctx)
	}
	defer closeAll()
	writeEvents := func(code int) int {
		if *eventsFile == "" {
			return code
		}
		closeAll() // the teardown belongs in the trace
		var b bytes.Buffer
		if err := event.WriteJSONL(&b, d.Events()); err == nil {
			err = writeFileDirs(*eventsFile, b.Bytes())
			if err != nil {
				fmt.Fprintf(stderr, "harness doctor: -events: %s\n", textsafe.Line(err.Error()))
				return 1
			}
		}
		return code
	}
	rep := d.Report()
	if *asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "harness doctor: %v\n", err)
			return 1
		}
		stdout.Write(append(b, '\n'))
	} else {
		doctor.WriteTable(stdout, rep, doctor.TableOptions{Width: w, Dir: cwd, Home: homeDir})
	}
	code := 0
	if rep.Failed > 0 {
		code = 1
	}
	if !*watch {
		return writeEvents(code)
	}
	if !*asJSON {
		how := "Enter or SIGUSR1 retries failed servers now"
		if in.keys == nil {
			how = "SIGUSR1 retries failed servers now"
		}
		fmt.Fprintf(stdout, "watching lifecycle events; %s; Ctrl-C stops every server and exits\n", how)
	}
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Retries asked for by a key or a signal; the answer goes where the
	// watch lines go (stderr with -json, which keeps stdout JSON).
	asked := make(chan struct{}, 1)
	ask := func() {
		select {
		case asked <- struct{}{}:
		default:
		}
	}
	if in.keys != nil {
		go func() {
			sc := bufio.NewScanner(in.keys)
			for sc.Scan() {
				ask()
			}
		}()
	}
	retried := make(chan struct{})
	go func() {
		defer close(retried)
		for {
			select {
			case <-wctx.Done():
				return
			case <-in.retry:
			case <-asked:
			}
			names := d.RetryFailed()
			msg := "retry: no server is waiting to retry"
			if len(names) > 0 {
				msg = "retry: retrying now: " + textsafe.Line(strings.Join(names, ", "))
			}
			mu.Lock()
			if *asJSON {
				fmt.Fprintf(stderr, "harness doctor: %s\n", msg)
			} else {
				fmt.Fprintln(stdout, msg)
			}
			mu.Unlock()
		}
	}()
	d.Watch(wctx, func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		var err error
		if *asJSON {
			err = enc.Encode(e)
		} else {
			_, err = fmt.Fprintln(stdout, doctor.WatchLine(e, w))
		}
		if err != nil {
			cancel() // nobody reads the stream any more
		}
	})
	cancel()
	<-retried
	if !*asJSON {
		fmt.Fprintln(stdout, "stopping the servers")
	}
	return writeEvents(code)
}
