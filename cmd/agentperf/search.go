package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/analysis/slo"
	"github.com/agentperf/agentperf/capacity"
	"github.com/agentperf/agentperf/run"
)

func init() {
	register(command{name: "search", summary: "find the highest concurrency that meets an SLO (exponential probe, then bisection), with every probe's folder and a plot", run: runSearch})
}

const searchExamples = `  # How many sessions does the simulated H200 hold with p99 TTFT ≤ 2 s and p99 ITL ≤ 50 ms?
  agentperf search --url sim:// --public-dataset synthetic --model demo --streaming \
      --slo 'ttft.p99<=2s,itl.p99<=50ms,errors<=1%' --concurrency-range 1:256 \
      --resolution 10% --probe-duration 30 --reset-prefix-cache --output-artifact-dir search-out`

// runSearch is `agentperf search`.
func runSearch(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("search", "search --url URL --model NAME --slo EXPR --concurrency-range LO:HI --probe-duration S [profile flags] --output-artifact-dir OUT", searchExamples, io.err)
	p := addProfileFlags(fs)
	pf := addPointFlags(fs)
	sf := addSearchFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := p.takeArgs(fs); err != nil {
		return err
	}
	if fs.Changed("repeats") {
		if fs.Changed("num-profile-runs") && sf.repeats != p.profileRuns {
			return usagef("search: --repeats %d and --num-profile-runs %d: give one of them (--repeats is the old name of --num-profile-runs)", sf.repeats, p.profileRuns)
		}
		p.profileRuns = sf.repeats
	}
	if err := rejectUnsupported(fs); err != nil {
		return err
	}
	objective, scfg, err := sf.search(fs, p)
	if err != nil {
		return err
	}
	// A term only streamed responses have (TTFT, ITL) would be missing
	// from every probe: say so now, not after the probes ran.
	streamed := func(s *run.Spec) error {
		if terms := objective.NeedsStreaming(); len(terms) > 0 && !s.Replay.Streaming {
			return usagef("search: --slo %s: only streamed responses have these metrics (time to first token, inter-token latency and what derives from them), and this run does not stream: add --streaming, or judge request latency (e2el.p99<=…) instead",
				strings.Join(terms, ", "))
		}
		return nil
	}
	pr, err := newPointRunner(ctx, p, pf, fs, scfg.Lo, io, streamed)
	if err != nil {
		return err
	}
	defer pr.Close()
	pr.logf("search: %s over concurrency %d:%d to a resolution of %s (%d run(s) per probe)", objective, scfg.Lo, scfg.Hi, scfg.Resolution, pr.Repeats())
	result, err := capacity.RunSearch(ctx, capacity.SearchConfig{
		Dir: p.spec.OutputDir, SLO: objective, Search: scfg, Repeats: pr.Repeats(), Settings: pr.settings(fs),
		Run: pr.Run, Before: pr.Before, Logf: pr.logf, Client: sf.client(),
	})
	if result != nil {
		printSearch(io, objective, scfg, result, p.spec.OutputDir)
	}
	if err != nil {
		return err
	}
	if result.Best == 0 || result.Inconclusive != nil {
		return errRunFailed
	}
	return nil
}

// searchFlags are the flags search adds to the profile and point flags.
type searchFlags struct {
	slo, rng, resolution      string
	probeDur                  float64
	repeats, retries          int
	maxLate, maxSched, maxCPU float64
}

func addSearchFlags(fs *pflag.FlagSet) *searchFlags {
	f := &searchFlags{}
	fs.StringVar(&f.slo, "slo", "", "objective every probe must meet, e.g. 'ttft.p99<=2s,itl.p99<=50ms,errors<=1%' (docs/capacity.md lists the metrics) (required)")
	fs.StringVar(&f.rng, "concurrency-range", "1:1024", "LO:HI, the concurrencies searched")
	fs.StringVar(&f.resolution, "resolution", "5%", "stop when the highest passing and lowest failing probes are this close: a number of concurrency steps, or a percentage of the passing one")
	fs.Float64Var(&f.probeDur, "probe-duration", 0, "seconds of profiling per probe run (sets --benchmark-duration of every probe) (required)")
	fs.IntVar(&f.repeats, "repeats", 1, "the same as --num-profile-runs")
	fs.Lookup("num-profile-runs").Usage = "profile runs per probe, 1 to 10 (each probe's folder holds profile_runs/run_000K and a pooled summary); the objective is judged on the records of all its runs pooled (percentiles over all of them, never averaged)"
	_ = fs.MarkDeprecated("repeats", "use --num-profile-runs (aiperf's name; the runs of a probe now go under its folder's profile_runs/)")
	fs.IntVar(&f.retries, "client-bound-retries", 1, "times a client-bound probe is run again before it is reported as such")
	fs.Float64Var(&f.maxLate, "client-max-lateness", capacity.DefaultMaxLatenessP99.Seconds()*1000, "ms: a probe whose own send lateness p99 exceeds this is client-bound (invalid), not a server failure (negative: no check)")
	fs.Float64Var(&f.maxSched, "client-max-sched-latency", capacity.DefaultMaxSchedP99.Seconds()*1000, "ms: a probe during which the p99 of the Go scheduler latency (goroutines waiting for a processor) exceeds this is client-bound (negative: no check)")
	fs.Float64Var(&f.maxCPU, "client-max-cpu", capacity.DefaultMaxCPU*100, "percent of GOMAXPROCS: a probe during which this process used this much CPU is client-bound (negative: no check)")
	fs.Lookup("output-artifact-dir").Usage = "search folder: a folder per probe run (probe-NN-c<N>), search_result.json, search_slo.png"
	// The search chooses the concurrency (refused in search), and
	// --probe-duration is the name of the probes' duration here.
	fs.Lookup("concurrency").Hidden = true
	fs.Lookup("benchmark-duration").Usage = "the same as --probe-duration (give one of them)"
	return f
}

// search maps the flags to the objective and the search's range,
// resolution and retries, and sets the probes' duration in p.
func (f *searchFlags) search(fs *pflag.FlagSet, p *profileFlags) (slo.SLO, capacity.Config, error) {
	var cfg capacity.Config
	if f.slo == "" {
		return slo.SLO{}, cfg, usagef("search: --slo is required, e.g. --slo 'ttft.p99<=2s,itl.p99<=50ms,errors<=1%%'")
	}
	objective, err := slo.Parse(f.slo)
	if err != nil {
		return objective, cfg, usagef("search: --slo: %v", err)
	}
	if fs.Changed("concurrency") {
		return objective, cfg, usagef("search: --concurrency is what the search chooses: give --concurrency-range LO:HI instead")
	}
	if cfg.Lo, cfg.Hi, err = capacity.ParseRange(f.rng); err != nil {
		return objective, cfg, usagef("search: --concurrency-range: %v", err)
	}
	if cfg.Resolution, err = capacity.ParseResolution(f.resolution); err != nil {
		return objective, cfg, usagef("search: --resolution: %v", err)
	}
	switch {
	case f.probeDur > 0 && fs.Changed("benchmark-duration"):
		return objective, cfg, usagef("search: give --probe-duration or --benchmark-duration, not both (they are the same: seconds of profiling per probe)")
	case f.probeDur > 0:
		p.spec.Replay.BenchmarkDuration = seconds(f.probeDur)
	case f.probeDur < 0:
		return objective, cfg, usagef("search: --probe-duration %g: must be positive", f.probeDur)
	case !fs.Changed("benchmark-duration"):
		return objective, cfg, usagef("search: --probe-duration is required: the seconds of profiling of each probe run, e.g. --probe-duration 120")
	}
	if f.retries < 0 {
		return objective, cfg, usagef("search: --client-bound-retries %d: must be at least 0", f.retries)
	}
	cfg.Retries = f.retries
	return objective, cfg, nil
}

// client is the client-bound check of the flags (ms and percent).
func (f *searchFlags) client() capacity.ClientCheck {
	return capacity.ClientCheck{MaxLatenessP99: time.Duration(f.maxLate * float64(time.Millisecond)), MaxCPU: f.maxCPU / 100,
		MaxSchedP99: time.Duration(f.maxSched * float64(time.Millisecond))}
}

func printSearch(io stdio, o slo.SLO, cfg capacity.Config, r *capacity.Result, dir string) {
	fmt.Fprintf(io.out, "\nSLO %s, concurrency %d:%d, resolution %s: %d probe(s)\n", o, cfg.Lo, cfg.Hi, cfg.Resolution, len(r.Probes))
	for i, p := range r.Probes {
		v := "met"
		switch {
		case p.Inconclusive:
			v = "INCONCLUSIVE: " + p.Why
		case p.ClientBound:
			v = "CLIENT-BOUND (invalid): " + p.ClientReason
		case !p.Met:
			v = "failed"
		}
		fmt.Fprintf(io.out, "  %2d. c=%-5d %s — %s\n", i+1, p.Concurrency, v, p.Detail)
	}
	fmt.Fprintf(io.out, "%s\n", capacity.Summary(cfg, r))
	if r.BestProbe != nil {
		if d, ok := r.BestProbe.Data.(*capacity.ProbeData); ok {
			fmt.Fprintf(io.out, "at concurrency %d: goodput %.3g requests/s (every per-request objective met) of %.3g requests/s\n", r.Best, d.Result.Goodput, d.Result.Throughput)
		}
	}
	fmt.Fprintf(io.out, "result: %s, plot: %s\n", filepath.Join(dir, capacity.SearchResultJSON), filepath.Join(dir, capacity.SearchPlot))
}
