package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// pointFlags are the flags sweep and search add to the profile flags.
type pointFlags struct {
	reset        bool
	drainTimeout float64
}

func addPointFlags(fs *pflag.FlagSet) *pointFlags {
	f := &pointFlags{}
	fs.BoolVar(&f.reset, "reset-prefix-cache", false, "before every point, wait until the server runs and queues nothing, then reset its prefix cache (vLLM POST /reset_prefix_cache, else SGLang POST /flush_cache); without it the server is only drained")
	fs.Float64Var(&f.drainTimeout, "drain-timeout", servermetrics.DefaultDrainTimeout.Seconds(), "seconds to wait for the server's /metrics to show no running or waiting request before a point")
	return f
}

// pointRunner maps the flags of sweep and search to the library's point
// runner (run.Points: one loaded corpus, one server, each point the
// profile run of the flags at its own concurrency and folder, repeated
// with --num-profile-runs) and keeps what the command prints.
type pointRunner struct {
	*run.Points
	io   stdio
	logf func(format string, args ...any)
}

// newPointRunner validates the flags (resolving the first point's run, and
// checking it with check when set, before anything is loaded) and starts
// the library's point runner. Call Close when done.
func newPointRunner(ctx context.Context, p *profileFlags, pf *pointFlags, fs *pflag.FlagSet, firstConc int, io stdio, check func(*run.Spec) error) (*pointRunner, error) {
	for _, f := range []string{"shard", "shard-count", "shard-rendezvous", "shard-join-timeout"} {
		if fs.Changed(f) {
			return nil, usagef("--%s: a sharded sweep or search is not supported yet: run the points on one client", f)
		}
	}
	if pf.drainTimeout <= 0 {
		return nil, usagef("--drain-timeout %g: must be positive (seconds)", pf.drainTimeout)
	}
	repeat, err := repeatOptions(p, fs)
	if err != nil {
		return nil, err
	}
	if err := p.discoverModel(ctx); err != nil {
		return nil, err
	}
	pr := &pointRunner{io: io,
		logf: func(format string, args ...any) {
			fmt.Fprintf(io.err, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
		}}
	p.concurrency = strconv.Itoa(firstConc)
	base, err := p.resolve(fs, io)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(&base.spec); err != nil {
			return nil, err
		}
	}
	pr.Points, err = run.StartPoints(ctx, base.spec, run.PointOptions{
		ResetPrefixCache: pf.reset, DrainTimeout: seconds(pf.drainTimeout), Repeat: repeat, Logf: pr.logf,
		Prepare: func(s *run.Spec) { s.Replay.KillNow = claimKillSwitch(ctx) },
		Ran: func(c int, o *run.Outcome) {
			o.WriteSummary(io.out)
			for _, x := range o.Problems {
				printPrefixed(io.err, flagNames(x.Message))
			}
		},
		Pooled: func(c int, o *run.RepeatOutcome) { o.WriteSummary(io.out) },
	})
	return pr, err
}

// repeatOptions are the repeated-run flags (--num-profile-runs and the
// flags that go with it) as profile takes them; Runs 1 (no repeat) when
// --num-profile-runs is 1.
func repeatOptions(p *profileFlags, fs *pflag.FlagSet) (run.RepeatOptions, error) {
	o := run.RepeatOptions{Runs: p.profileRuns, Cooldown: seconds(p.runCooldown), Confidence: p.confidence,
		ConvergenceMetric: p.convMetric, ConvergenceThreshold: p.convThreshold}
	return o, asUsage(o.CheckFlags(fs.Changed))
}

// settings are what every point or probe is made with besides its
// concurrency (run.Points.Settings): every flag's value, default or not.
func (pr *pointRunner) settings(fs *pflag.FlagSet) map[string]string {
	flags := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) { flags[f.Name] = f.Value.String() })
	return pr.Settings(flags, os.Environ())
}
