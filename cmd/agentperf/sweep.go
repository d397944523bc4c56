package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentperf/agentperf/capacity"
)

func init() {
	register(command{name: "sweep", summary: "profile runs at several concurrencies against one server: a folder per point, the sweep table, the Pareto plot, sweep.html; resumes", run: runSweep})
}

const sweepExamples = `  # Four points against the in-process simulator, each with a cold prefix cache
  agentperf sweep --url sim:// --public-dataset synthetic --model demo --streaming \
      --concurrency 4,8,16,32 --benchmark-duration 30 --reset-prefix-cache \
      --output-artifact-dir sweep-out

  # The same command again after an interruption runs only the missing points.

  # Each point run three times against the one server: a mean and a 95% interval per figure
  agentperf sweep --url sim:// --public-dataset synthetic --model demo --streaming \
      --concurrency 4,8 --benchmark-duration 30 --num-profile-runs 3 --output-artifact-dir sweep-out`

// runSweep is `agentperf sweep`: the profile flags, with --concurrency a
// list; one profile run per point, in order.
func runSweep(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("sweep", "sweep --url URL --model NAME --concurrency 4,8,16 --benchmark-duration S [profile flags] --output-artifact-dir OUT", sweepExamples, io.err)
	p := addProfileFlags(fs)
	pf := addPointFlags(fs)
	tp := fs.Int("tp", 0, "tensor-parallel size of the deployment, for the per-GPU throughput of the table and Pareto plot (default: $TP, else 1 with --url sim://)")
	// --config is the profile flags' YAML file (aiperf's -f): the rows'
	// name is --config-name.
	config := fs.String("config-name", "", "configuration name of the sweep's rows in the table and plot")
	fs.Lookup("concurrency").Usage = "comma-separated concurrencies, one point each, run in this order (required)"
	fs.Lookup("output-artifact-dir").Usage = "sweep folder: a folder per point (c<N>), the table, pareto.png, sweep.html"
	fs.Lookup("num-profile-runs").Usage = "profile runs per point, 1 to 10: each point's folder holds profile_runs/run_000K and a pooled summary in aggregate/; the table shows each figure's mean over the runs and its interval (docs/capacity.md)"
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := p.takeArgs(fs); err != nil {
		return err
	}
	if err := rejectUnsupported(fs); err != nil {
		return err
	}
	if p.concurrency == "" {
		return usagef("sweep: --concurrency is required: the points, e.g. 4,8,16,32")
	}
	points, err := capacity.ParsePoints(p.concurrency)
	if err != nil {
		return usagef("sweep: --concurrency: %v", err)
	}
	sim := strings.HasPrefix(p.spec.Replay.URL, "sim:")
	*tp = capacity.ResolveTP(*tp, sim, os.Getenv)
	if *tp < 0 {
		return usagef("sweep: --tp %d: must be positive", *tp)
	}
	out := p.spec.OutputDir
	pr, err := newPointRunner(ctx, p, pf, fs, points[0], io, nil)
	if err != nil {
		return err
	}
	defer pr.Close()
	res, err := capacity.RunSweep(ctx, capacity.SweepRun{
		SweepConfig: capacity.SweepConfig{Dir: out, Points: points, Run: pr.Run, Before: pr.Before, Logf: pr.logf, Settings: pr.settings(fs)},
		Labels:      capacity.SweepLabels{TP: *tp, Config: *config},
		Repeated:    pr.Repeats() > 1, Simulated: sim,
	})
	if res.Reported {
		printSweep(io, res, len(points), out)
	}
	if err != nil {
		if ctx.Err() != nil {
			pr.logf("sweep: interrupted; run the same command again to resume from the first incomplete point")
		}
		return err
	}
	if !res.AllOK() {
		return errRunFailed
	}
	return nil
}

// printSweep prints the sweep's table and where its files are.
func printSweep(io stdio, res *capacity.SweepOutcome, points int, dir string) {
	if res.Table != nil {
		fmt.Fprintf(io.out, "\n%s\n", res.Table)
	}
	also := ""
	if n := len(res.Points) - res.Mine; n > 0 {
		also = fmt.Sprintf(" (the table also has %d point(s) of an earlier sweep in the folder, made with the same settings)", n)
	}
	fmt.Fprintf(io.out, "sweep: %d of %d point(s) complete in %s%s; table %s, Pareto %s, page %s\n", res.Mine, points, dir, also,
		capacity.SweepTableMD, capacity.SweepPareto, capacity.SweepHTML)
}
