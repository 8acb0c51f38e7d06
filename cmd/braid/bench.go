package main

import (
	"context"
	"fmt"
	"io"

	"github.com/braidhq/braid/bench/scale"
)

// benchCommands are the `braid bench` subcommands.
var benchCommands = map[string]command{
	"overhead":  {"units/s of a no-op operation through the whole system", runBenchOverhead},
	"transport": {"throughput and request/response rate per transport and stream count", runBenchTransport},
	"paper":     {"section IV of the paper: figures 4–16, plots and REPORT.md", runBenchPaper},
	"chaos":     {"kill, freeze, cut off and restart the parts of a running cluster; check nothing is lost", runBenchChaos},
	"soak":      {"a server fed jobs for a long time: memory and state.db size as it goes", runBenchSoak},
	"net":       {"whole jobs through the emulated WAN: every transport setting over RTT × loss × unit size, the default against the best", runBenchNet},
	"schedsim":  {"the scheduling core alone, in virtual time: assignments/s over 10 to 100,000 workers, memory per unit", runBenchSchedsim},
	"fair":      {"what braid's association takes beside competing CUBIC, BBR or reno flows on an emulated path: rates and Jain's index", runBenchFair},
	"feedback":  {"receiver feedback: a worker that cannot keep up, bounded by unit windows or by byte budgets", runBenchFeedback},
	"scale":     {"thousands of simulated workers and a million-unit job through one real server", runBenchScale},
}

func runBench(ctx context.Context, args []string, e *env) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		benchUsage(e.stdout)
		return nil
	}
	if args[0] == scale.PollCommand { // hidden: the child `bench scale` starts
		return runBenchScalePoll(ctx, args[1:], e)
	}
	cmd, ok := benchCommands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "braid bench: unknown benchmark %q\n", args[0])
		benchUsage(e.stderr)
		return errUsage
	}
	return cmd.run(ctx, args[1:], e)
}

func benchUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: braid bench BENCHMARK [flags]\n\nBenchmarks:")
	for _, name := range sortedKeys(benchCommands) {
		fmt.Fprintf(w, "  %-10s %s\n", name, benchCommands[name].summary)
	}
}
