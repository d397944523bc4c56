package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentperf/agentperf/analysis/slo"
	"github.com/agentperf/agentperf/metrics"
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
	// Repeats is the number of runs Run makes per probe (default 1): Run
	// is called once per probe, and a probe of several runs leaves a
	// repeated run's folder (profile_runs/run_000K and the pooled
	// summary: run.Points with PointOptions.Repeat). Their records
	// are pooled for the objective. Recorded in search_result.json; a
	// search resumes only over probes made with the same.
	Repeats int
	// Settings are what the probes are run with besides their
	// concurrency (the command's flags and environment, the corpus
	// digest): recorded in search_result.json, and a search in a folder
	// that holds one reuses the earlier probes only when they are equal
	// (SettingsDiff).
	Settings map[string]string
	// Run runs one measurement at concurrency c into dir.
	Run PointFunc
	// Before, when set, runs before every measurement (reset, drain).
	Before func(ctx context.Context, c int) error
	// Client says when a probe is client-bound.
	Client ClientCheck
	// Logf gets one line per probe.
	Logf func(format string, args ...any)
}

// RunSearch runs Search with probes that are real runs: each probe is one
// call of Run into a folder of its own (one run, or a repeated run's
// runs), judges the objective on the pooled records of its runs, and is
// client-bound when any run was (its send lateness p99, or the process's
// CPU use or scheduler latency over the probe: ClientCheck). A probe with
// a run that aborted, or whose objective could not be judged for too few
// samples, is inconclusive and stops the search. It writes search_result.json
// and the plot into Dir after every probe and at the end, also after an
// error or an interruption (with the probes finished so far).
//
// A search folder that holds the result of an earlier search with the
// same objective, range, resolution, repeats and Settings is resumed:
// the probes it finished are judged again from their folders instead of
// being run (up to the first inconclusive one, which runs again).
func RunSearch(ctx context.Context, cfg SearchConfig) (*Result, error) {
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("search: create %s: %w", cfg.Dir, err)
	}
	reuse, err := earlierProbes(cfg, logf)
	if err != nil {
		return nil, err
	}
	pr := &prober{cfg: cfg, logf: logf, reuse: reuse}
	sc := cfg.Search
	sc.Logf = cfg.Logf
	sc.Progress = func(res *Result) {
		if err := WriteSearchReport(cfg, res); err != nil {
			logf("search: warning: %v", err)
		}
	}
	res, err := Search(ctx, sc, pr.probe)
	if res != nil {
		if werr := WriteSearchReport(cfg, res); werr != nil && err == nil {
			err = werr
		}
	}
	return res, err
}

// prober is RunSearch's ProbeFunc: it reuses an earlier search's probes
// while the search goes their way, and runs the others.
type prober struct {
	cfg   SearchConfig
	logf  func(string, ...any)
	reuse []ProbeJSON // the earlier search's probes, in the order run
	n     int         // probes so far, this one included
}

func (pr *prober) probe(ctx context.Context, c, attempt int) (Probe, error) {
	pr.n++
	if p, ok := pr.reused(c, attempt); ok {
		return p, nil
	}
	return pr.measure(ctx, c)
}

// reused returns the earlier search's probe in this place when it was at
// the same concurrency and attempt and can be judged again from its
// folders; the first that is not ends the reuse.
func (pr *prober) reused(c, attempt int) (Probe, bool) {
	if pr.n > len(pr.reuse) {
		return Probe{}, false
	}
	if old := pr.reuse[pr.n-1]; old.Concurrency == c && old.Attempt == attempt {
		if p, ok := rejudge(pr.cfg, old); ok {
			pr.logf("search: probe %d at concurrency %d: finished by an earlier search in this folder (%s), judged again from its records", pr.n, c, strings.Join(old.Dirs, ", "))
			return p, true
		}
	}
	pr.reuse = nil // the search goes another way from here
	return Probe{}, false
}

// measure runs probe n at concurrency c into its own folder, with the
// process's CPU measured over the run, and judges it.
func (pr *prober) measure(ctx context.Context, c int) (Probe, error) {
	cfg := pr.cfg
	d := &ProbeData{}
	p := Probe{Data: d}
	dir := filepath.Join(cfg.Dir, ProbeDir(pr.n, c))
	if _, err := os.Stat(dir); err == nil {
		aside, err := moveAside(dir)
		if err != nil {
			return p, fmt.Errorf("%s exists and cannot be moved aside: %w", dir, err)
		}
		pr.logf("search: %s is left from an earlier search: kept as %s", dir, aside)
	}
	if cfg.Before != nil {
		if err := cfg.Before(ctx, c); err != nil {
			return p, err
		}
	}
	meter := StartCPU()
	err := cfg.Run(ctx, c, dir)
	cpu := meter.Stop()
	if ctx.Err() != nil {
		return p, ctx.Err()
	}
	if err != nil && !errors.Is(err, ErrPointFailed) {
		return p, err
	}
	if err := clientBound(cfg, &p, d, dir, cpu); err != nil {
		return p, err
	}
	if err := judgeProbe(cfg, &p, d); err != nil {
		return p, err
	}
	p.Detail = strings.TrimPrefix(fmt.Sprintf("%s; goodput %.3g req/s of %.3g req/s; client CPU %.0f%%, scheduler latency p99 %s", p.Detail, d.Result.Goodput, d.Result.Throughput, 100*cpu.Share(), cpu.SchedP99.Round(10*time.Microsecond)), "; ")
	return p, nil
}

// clientBound lists the probe's runs in d.Dirs: its folder dir, or the
// runs of a repeated probe (profile_runs/run_000K), and judges each
// client-bound on its own send lateness and the probe's CPU and
// scheduler figures (p.ClientBound, p.ClientReason).
func clientBound(cfg SearchConfig, p *Probe, d *ProbeData, dir string, cpu CPUUse) error {
	runs, err := metrics.RunFolders(dir)
	if err != nil {
		return fmt.Errorf("judge %s: %w", dir, err)
	}
	if len(runs) == 0 {
		return fmt.Errorf("judge %s: the probe finished no run (its pooled summary lists none)", dir)
	}
	var reasons []string
	for _, rd := range runs {
		rel, err := filepath.Rel(cfg.Dir, rd)
		if err != nil {
			return err
		}
		d.Dirs = append(d.Dirs, filepath.ToSlash(rel))
		run, lerr := slo.Load(rd)
		if lerr != nil {
			return fmt.Errorf("judge %s: %w", rd, lerr)
		}
		if bound, why := cfg.Client.Judge(run.Lateness, cpu); bound {
			p.ClientBound = true
			if len(runs) > 1 {
				why = fmt.Sprintf("run %s: %s", filepath.Base(rd), why)
			}
			reasons = append(reasons, why)
		}
	}
	p.ClientReason = strings.Join(reasons, "; ")
	return nil
}

// judgeProbe judges the objective on the probe's pooled runs (d.Dirs) and
// sets p's verdict: inconclusive when a run aborted or a term had too few
// samples to be judged.
func judgeProbe(cfg SearchConfig, p *Probe, d *ProbeData) error {
	dirs := make([]string, len(d.Dirs))
	for i, x := range d.Dirs {
		dirs[i] = filepath.Join(cfg.Dir, x)
	}
	run, err := slo.Load(dirs...)
	if err != nil {
		return err
	}
	d.Result = cfg.SLO.Evaluate(run)
	p.Met = d.Result.Met
	if f := d.Result.Failed(); len(f) > 0 {
		p.Detail = strings.Join(f, ", ")
	}
	switch {
	case run.Aborted != "":
		p.Inconclusive = true
		p.Why = fmt.Sprintf("aborted (%s: %s; %s)", run.Aborted, run.AbortMessage, filepath.Base(run.AbortedDir))
	case d.Result.Undecided && !p.ClientBound: // a client-bound probe is invalid anyway, and is retried
		var few []string
		for _, t := range d.Result.Terms {
			if !t.Judged {
				few = append(few, fmt.Sprintf("%s on %d samples of the %d it needs", t.Name(), t.Samples, t.MinSamples))
			}
		}
		p.Inconclusive = true
		p.Why = "had too few requests to judge " + strings.Join(few, ", ") + " (lengthen the probe: --probe-duration)"
	}
	return nil
}

// rejudge makes a probe of an earlier search again from its folders, when
// every one is complete.
func rejudge(cfg SearchConfig, old ProbeJSON) (Probe, bool) {
	if len(old.Dirs) == 0 || old.Inconclusive {
		return Probe{}, false
	}
	for _, d := range old.Dirs {
		if _, err := os.Stat(filepath.Join(cfg.Dir, d, "profile_export_aiperf.json")); err != nil {
			return Probe{}, false
		}
	}
	d := &ProbeData{Dirs: old.Dirs}
	p := Probe{Data: d, ClientBound: old.ClientBound, ClientReason: old.ClientReason}
	if err := judgeProbe(cfg, &p, d); err != nil || p.Inconclusive {
		return Probe{}, false
	}
	p.Detail = old.Detail
	return p, true
}

// earlierProbes reads the result an earlier search left in cfg.Dir and
// returns its probes when it was made with the same objective, range,
// resolution, repeats and settings. One made otherwise is moved aside
// (search_result.json.replaced), and the log says what differs.
func earlierProbes(cfg SearchConfig, logf func(string, ...any)) ([]ProbeJSON, error) {
	name := filepath.Join(cfg.Dir, SearchResultJSON)
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	var old SearchJSON
	var diffs []string
	if err := json.Unmarshal(b, &old); err != nil {
		diffs = []string{fmt.Sprintf("unreadable (%v)", err)}
	} else {
		cmp := func(what string, a, b any) {
			if fmt.Sprint(a) != fmt.Sprint(b) {
				diffs = append(diffs, fmt.Sprintf("%s %v → %v", what, a, b))
			}
		}
		cmp("objective", old.SLO, cfg.SLO.String())
		cmp("range", fmt.Sprintf("%d:%d", old.Lo, old.Hi), fmt.Sprintf("%d:%d", cfg.Search.Lo, cfg.Search.Hi))
		cmp("resolution", old.Resolution, cfg.Search.Resolution.String())
		cmp("repeats", max(old.Repeats, 1), max(cfg.Repeats, 1))
		diffs = append(diffs, SettingsDiff(old.Settings, cfg.Settings)...)
	}
	if len(diffs) == 0 {
		logf("search: %s holds an earlier search with the same settings (%s, %d probe(s)): its finished probes are reused", cfg.Dir, old.Status, len(old.Probes))
		var out []ProbeJSON
		for _, p := range old.Probes {
			if p.Inconclusive {
				break // run again
			}
			out = append(out, p)
		}
		return out, nil
	}
	aside, err := moveAsideAs(name, ".replaced")
	if err != nil {
		return nil, fmt.Errorf("search: %s is from another search and cannot be moved aside: %w", name, err)
	}
	logf("search: %s is from a search with other settings (%s): none of its probes is reused; it is kept as %s", name, strings.Join(diffs, "; "), aside)
	return nil, nil
}
