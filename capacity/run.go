package capacity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentperf/agentperf/slo"
)

// SearchConfig configures RunSearch.
type SearchConfig struct {
	// Dir is the search folder: one folder per probe run, the result and
	// the plot.
	Dir string
	// SLO is the objective every probe is judged on.
	SLO slo.SLO
	// Search is the range, resolution and client-bound retries.
	Search Config
	// Repeats is the number of runs per probe, pooled (default 1).
	Repeats int
	// Run runs one measurement at concurrency c into dir.
	Run PointFunc
	// Before, when set, runs before every measurement (reset, drain).
	Before func(ctx context.Context, c int) error
	// Client says when a probe is client-bound.
	Client ClientCheck
	// Logf gets one line per probe.
	Logf func(format string, args ...any)
}

// RunSearch runs Search with probes that are real runs: each probe runs
// Repeats measurements into folders of its own, judges the objective on
// their pooled records, and is client-bound when any run was (its send
// lateness p99 or the process's CPU use, ClientCheck). It writes
// search_result.json and the plot into Dir, also after an error (with
// the probes run so far).
func RunSearch(ctx context.Context, cfg SearchConfig) (*Result, error) {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("search: create %s: %w", cfg.Dir, err)
	}
	repeats := max(cfg.Repeats, 1)
	n := 0
	probe := func(ctx context.Context, c, attempt int) (Probe, error) {
		n++
		d := &ProbeData{}
		p := Probe{Data: d}
		var reasons []string
		cpuShare := 0.0
		var sched time.Duration
		for r := range repeats {
			name := ProbeDir(n, c)
			if repeats > 1 {
				name += fmt.Sprintf("-r%d", r+1)
			}
			dir := filepath.Join(cfg.Dir, name)
			if _, err := os.Stat(dir); err == nil {
				if _, err := moveAside(dir); err != nil {
					return p, fmt.Errorf("%s exists and cannot be moved aside: %w", dir, err)
				}
			}
			if cfg.Before != nil {
				if err := cfg.Before(ctx, c); err != nil {
					return p, err
				}
			}
			meter := StartCPU()
			err := cfg.Run(ctx, c, dir)
			cpu := meter.Stop()
			cpuShare = max(cpuShare, cpu.Share())
			sched = max(sched, cpu.SchedP99)
			if ctx.Err() != nil {
				return p, ctx.Err()
			}
			if err != nil && !errors.Is(err, ErrPointFailed) {
				return p, err
			}
			d.Dirs = append(d.Dirs, name)
			run, lerr := slo.Load(dir)
			if lerr != nil {
				return p, fmt.Errorf("judge %s: %w", dir, lerr)
			}
			if bound, why := cfg.Client.Judge(run.Lateness, cpu); bound {
				p.ClientBound = true
				reasons = append(reasons, why)
			}
		}
		dirs := make([]string, len(d.Dirs))
		for i, x := range d.Dirs {
			dirs[i] = filepath.Join(cfg.Dir, x)
		}
		run, err := slo.Load(dirs...)
		if err != nil {
			return p, err
		}
		d.Result = cfg.SLO.Evaluate(run)
		p.Met = d.Result.Met
		p.ClientReason = strings.Join(reasons, "; ")
		if f := d.Result.Failed(); len(f) > 0 {
			p.Detail = strings.Join(f, ", ")
		}
		p.Detail = strings.TrimPrefix(fmt.Sprintf("%s; goodput %.3g req/s of %.3g req/s; client CPU %.0f%%, scheduler latency p99 %s", p.Detail, d.Result.Goodput, d.Result.Throughput, 100*cpuShare, sched.Round(10*time.Microsecond)), "; ")
		return p, nil
	}
	sc := cfg.Search
	sc.Logf = cfg.Logf
	res, err := Search(ctx, sc, probe)
	if res != nil {
		if werr := WriteSearchReport(cfg.Dir, cfg.SLO, cfg.Search, res); werr != nil && err == nil {
			err = werr
		}
	}
	return res, err
}
