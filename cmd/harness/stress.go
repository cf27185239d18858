package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/mcplife/mcplife/cmd/harness/internal/stress"
	"github.com/mcplife/mcplife/conformance"
)

// stressFlags are the flags `harness run` and `harness conformance` share to
// repeat themselves under CPU contention (docs/CONFORMANCE.md, "Stress").
type stressFlags struct {
	runs       int
	gomaxprocs int
	burners    int
	parallel   int
	json       string
	all        bool
}

// stressFlagNames are the flags a stressed run leaves out of its children's
// command lines, with whether each takes a value.
var stressFlagNames = map[string]bool{
	"stress": true, "stress-gomaxprocs": true, "stress-burners": true, "stress-parallel": true, "stress-json": true, "stress-all": false,
	"json": true, "junit": true,
}

func (s *stressFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&s.runs, "stress", 0, "run `N` times, each in its own process with GOMAXPROCS=-stress-gomaxprocs beside CPU burners, and print a flake table (build the harness with -race for the full check; see .ci/stress)")
	fs.IntVar(&s.gomaxprocs, "stress-gomaxprocs", 1, "GOMAXPROCS of each stressed run")
	fs.IntVar(&s.burners, "stress-burners", 0, "spinning goroutines beside the stressed runs (0: one per CPU, -1: none)")
	fs.IntVar(&s.parallel, "stress-parallel", 1, "stressed runs at once; each contends with the others as with the burners")
	fs.StringVar(&s.json, "stress-json", "", "write the stress report as JSON to `FILE`")
	fs.BoolVar(&s.all, "stress-all", false, "list every check in the flake table, not only those that failed")
}

// childArgs returns args without the flags a stressed run sets itself.
func childArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			out = append(out, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, drop := stressFlagNames[name]
		if !drop {
			out = append(out, a)
			continue
		}
		if takesValue && !hasValue {
			i++ // the value is the next argument
		}
	}
	return out
}

// runStress repeats `harness <command> args...` s.runs times and prints the
// flake table. Exit status: 0 when every run reported and nothing failed.
func runStress(command string, args []string, s stressFlags, parse func(string) ([]stress.Verdict, error), stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "harness %s: %v\n", command, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := stress.Config{
		Command:    append([]string{exe, command}, childArgs(args)...),
		JSONFlag:   "-json",
		Parse:      parse,
		Runs:       s.runs,
		GOMAXPROCS: s.gomaxprocs,
		Burners:    s.burners,
		Parallel:   s.parallel,
		Progress:   stdout,
	}
	fmt.Fprintf(stdout, "stress: %d runs of harness %s %s (race detector %s, GOMAXPROCS=%d)\n",
		s.runs, command, strings.Join(childArgs(args), " "), pick(builtWithRace, "on", "off"), max(1, s.gomaxprocs))
	rep, err := stress.Run(ctx, cfg)
	if rep == nil {
		fmt.Fprintf(stderr, "harness %s: %v\n", command, err)
		return 2
	}
	rep.WriteTable(stdout, s.all)
	if s.json != "" {
		f, ferr := os.Create(s.json)
		if ferr == nil {
			ferr = rep.WriteJSON(f)
			if cerr := f.Close(); ferr == nil {
				ferr = cerr
			}
		}
		if ferr != nil {
			fmt.Fprintf(stderr, "harness %s: -stress-json: %v\n", command, ferr)
			return 1
		}
	}
	if err != nil || !rep.OK() {
		return 1
	}
	return 0
}

// conformanceVerdicts reads a conformance JSON report; failures the
// baseline expects count as passes.
func conformanceVerdicts(baseline *conformance.Baseline) func(string) ([]stress.Verdict, error) {
	return func(path string) ([]stress.Verdict, error) {
		specs, err := conformance.ReadJSONReport(path)
		if err != nil {
			return nil, err
		}
		out := make([]stress.Verdict, 0, len(specs))
		for _, s := range specs {
			v := stress.Verdict{ID: s.ID, Skipped: s.State == types.SpecStateSkipped}
			if s.State.Is(types.SpecStateFailureStates) {
				if _, expected := baselineReason(baseline, s.ID); !expected {
					v.Failed, v.Message = true, s.Message
				}
			}
			out = append(out, v)
		}
		return out, nil
	}
}

func baselineReason(b *conformance.Baseline, id string) (string, bool) {
	if b == nil {
		return "", false
	}
	return b.ReasonFor(id) // id is a report's key, "ID@era"
}

// scenarioVerdicts reads a `harness run -json` report.
func scenarioVerdicts(path string) ([]stress.Verdict, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the JSON report: %w", err)
	}
	var rep jsonReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]stress.Verdict, 0, len(rep.Scenarios))
	for _, s := range rep.Scenarios {
		id := s.Name
		if s.Era != "" {
			id += " [" + s.Era + "]"
		}
		v := stress.Verdict{ID: id, Skipped: s.Status == "skip" || s.Status == "n/a"}
		if s.Status == "fail" {
			v.Failed, v.Message = true, s.Reason
			if v.Message == "" {
				v.Message = lastLines(s.Log, 3)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}
