package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/capacity"
	"github.com/agentperf/agentperf/metrics"
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
	if err := p.takePositional(fs); err != nil {
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
	if *tp == 0 {
		if v, err := strconv.Atoi(os.Getenv("TP")); err == nil && v > 0 {
			*tp = v
		} else if strings.HasPrefix(p.spec.Replay.URL, "sim:") {
			*tp = 1 // the simulator models one GPU
		}
	}
	if *tp < 0 {
		return usagef("sweep: --tp %d: must be positive", *tp)
	}
	out := p.spec.OutputDir
	pr, err := newPointRunner(ctx, p, pf, fs, points[0], io, nil)
	if err != nil {
		return err
	}
	defer pr.Close()
	labels := capacity.SweepLabels{TP: *tp, Config: *config}
	ixSeen := map[string]bool{} // the InferenceX warnings said so far
	pts, err := capacity.Sweep(ctx, capacity.SweepConfig{
		Dir: out, Points: points, Run: pr.run, Before: pr.Before, Logf: pr.logf, Settings: pr.settings(fs),
		After: func(c int, dir string) error {
			// InferenceX's CONC and TP are the point's, unless set.
			look := func(n string) (string, bool) {
				if v, ok := os.LookupEnv(n); ok && v != "" {
					return v, true
				}
				switch {
				case n == "CONC":
					return strconv.Itoa(c), true
				case n == "TP" && *tp > 0:
					return strconv.Itoa(*tp), true
				}
				return "", false
			}
			warnings, err := capacity.WritePointInferenceX(dir, look)
			// A repeated point has one in each run's folder.
			ixName := filepath.Join(dir, capacity.PointInferenceX)
			if pr.Repeats() > 1 {
				ixName = filepath.Join(dir, metrics.DirProfileRuns, "run_*", capacity.PointInferenceX)
			}
			// InferenceX's variables are the same at every point: each
			// warning about them is said once, at the first point that
			// has it. Against the simulator no InferenceX processor will
			// read the file: one line says what is left out.
			var fresh []string
			for _, w := range warnings {
				if !ixSeen[w] {
					ixSeen[w] = true
					fresh = append(fresh, w)
				}
			}
			switch {
			case len(fresh) == 0:
			case strings.HasPrefix(p.spec.Replay.URL, "sim:"):
				pr.logf("note: %s: written with %d warnings about InferenceX's environment variables left out (a simulator run, which no InferenceX processor reads: `agentperf report --format inferencex %s` lists them)", ixName, len(fresh), filepath.Dir(ixName))
			default:
				for _, w := range fresh {
					pr.logf("warning: %s (every point's %s): %s", ixName, capacity.PointInferenceX, w)
				}
			}
			return err
		},
	})
	// The table, plot and page cover the points complete so far, also
	// after an interruption.
	if len(pts) > 0 {
		warnings, werr := capacity.WriteSweepReport(out, pts, labels)
		for _, w := range warnings {
			pr.logf("warning: %s", w)
		}
		if werr != nil && err == nil {
			err = werr
		}
		if werr == nil {
			if b, rerr := os.ReadFile(filepath.Join(out, capacity.SweepTableMD)); rerr == nil {
				fmt.Fprintf(io.out, "\n%s\n", b)
			}
			mine := 0
			for _, pt := range pts {
				if slices.Contains(points, pt.Concurrency) {
					mine++
				}
			}
			also := ""
			if n := len(pts) - mine; n > 0 {
				also = fmt.Sprintf(" (the table also has %d point(s) of an earlier sweep in the folder, made with the same settings)", n)
			}
			fmt.Fprintf(io.out, "sweep: %d of %d point(s) complete in %s%s; table %s, Pareto %s, page %s\n", mine, len(points), out, also,
				capacity.SweepTableMD, capacity.SweepPareto, capacity.SweepHTML)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			pr.logf("sweep: interrupted; run the same command again to resume from the first incomplete point")
		}
		return err
	}
	for _, pt := range pts {
		if pt.Status != capacity.PointOK {
			return errRunFailed
		}
	}
	return nil
}
