package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentperf/agentperf/capacity"
	"github.com/agentperf/agentperf/server/servermetrics"
	"github.com/agentperf/agentperf/server/sim"
)

// PointOptions configure Points.
type PointOptions struct {
	// ResetPrefixCache, before every point, waits until the server runs
	// and queues nothing and then resets its prefix cache
	// (servermetrics.ResetAndDrain); a server that cannot be reset is an
	// error. Without it the server is only drained, and a server whose
	// /metrics cannot say it is idle is a warning (Logf).
	ResetPrefixCache bool
	// DrainTimeout bounds the drain; 0 means
	// servermetrics.DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Repeat, with Runs 2 or more, runs every point that many times
	// against the one server (RunRepeated: the point's folder holds
	// profile_runs/run_000K and the pooled summary). Runs 0 or 1: each
	// point runs once, into its folder.
	Repeat RepeatOptions
	// Logf gets the runner's lines (the simulator, the drain, the reset).
	Logf func(format string, args ...any)
	// Prepare, when set, adjusts the Spec of each point before it runs
	// (a kill switch, a signal count).
	Prepare func(s *Spec)
	// Ran, when set, is given each finished run of a point, in order
	// (to print its summary); Pooled each repeated point's pooled outcome.
	Ran    func(c int, o *Outcome)
	Pooled func(c int, o *RepeatOutcome)
}

// Points runs the points of a sweep or the probes of a search: each is the
// run of one Spec with its own concurrency and folder, against one server,
// the corpus and synthesizer loaded once (Spec.Loaded) and, for a sim://
// URL, one in-process simulator serving every point. Run is a
// capacity.PointFunc and Before the drain and reset before a point.
type Points struct {
	spec    Spec
	o       PointOptions
	loaded  *Loaded
	simSrv  *sim.Server
	url     string
	headers http.Header
}

// StartPoints checks s (with the concurrency of any point) and o, loads
// the corpus and synthesizer once, and starts the in-process simulator
// when the URL is sim://. A Spec or option the library refuses is an
// *InputError. Call Close when done.
func StartPoints(ctx context.Context, s Spec, o PointOptions) (_ *Points, err error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = servermetrics.DefaultDrainTimeout
	}
	if o.DrainTimeout < 0 {
		return nil, inputErr(fmt.Errorf("PointOptions.DrainTimeout %v: must be positive", o.DrainTimeout))
	}
	if o.Repeat.Runs >= 2 {
		if err := o.Repeat.normalize(); err != nil {
			return nil, err
		}
	} else if o.Repeat.Runs < 0 {
		return nil, inputErr(fmt.Errorf("RepeatOptions.Runs %d: want 1 to %d profile runs", o.Repeat.Runs, MaxProfileRuns))
	}
	if s.Replay.Shard.Sharded() {
		return nil, inputErr(errors.New("a sharded sweep or search is not supported yet: run the points on one client"))
	}
	if err := s.Validate(); err != nil {
		return nil, inputErr(err)
	}
	p := &Points{o: o, url: s.Replay.URL, headers: s.InferenceHeaders()}
	if p.loaded, err = Load(ctx, s); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	s.Loaded = p.loaded
	// Every point's Spec names the simulator's address: one simulator.
	srv, cfg, err := s.startSimulator(p.loaded, true)
	if err != nil {
		return nil, err
	}
	if srv != nil {
		p.simSrv, p.url = srv, srv.URL
		o.Logf("in-process simulator serving %q at %s for every point", cfg.Model, srv.URL)
	}
	p.spec = s
	return p, nil
}

// Loaded is the corpus and synthesizer every point uses.
func (p *Points) Loaded() *Loaded { return p.loaded }

// Repeats is the number of runs per point (1 when the points are not
// repeated).
func (p *Points) Repeats() int { return max(p.o.Repeat.Runs, 1) }

// Close stops the simulator and closes the corpus.
func (p *Points) Close() {
	if p.simSrv != nil {
		p.simSrv.Close()
	}
	p.loaded.Close()
}

// Run is a capacity.PointFunc: the run of the Spec at concurrency c into
// dir, repeated as PointOptions.Repeat asks. A point that finished but
// failed or is not valid (exit code 1; for a repeated point, its worst
// run's) wraps capacity.ErrPointFailed; an interrupted one wraps
// context.Canceled.
func (p *Points) Run(ctx context.Context, c int, dir string) error {
	s := p.spec
	s.Replay.Concurrency = c
	s.OutputDir = dir
	// The sweep or search owns its points' folders: a point it runs
	// again (one that did not finish) replaces what is there.
	s.OverwriteArtifacts = true
	if p.o.Prepare != nil {
		p.o.Prepare(&s)
	}
	var code int
	if p.o.Repeat.Runs >= 2 {
		out, err := RunRepeated(ctx, s, p.o.Repeat)
		if out != nil && p.o.Ran != nil {
			for _, r := range out.Runs {
				p.o.Ran(c, r)
			}
		}
		if err != nil {
			return err
		}
		if p.o.Pooled != nil {
			p.o.Pooled(c, out)
		}
		code = out.ExitCode()
	} else {
		out, err := Run(ctx, s)
		if err != nil {
			return err
		}
		if p.o.Ran != nil {
			p.o.Ran(c, out)
		}
		code = out.ExitCode()
	}
	switch code {
	case ExitOK:
		return nil
	case ExitInterrupted:
		return fmt.Errorf("the run at concurrency %d was interrupted; artifacts written to %s: %w", c, dir, context.Canceled)
	}
	if p.o.Repeat.Runs >= 2 {
		return fmt.Errorf("%w: a run at concurrency %d failed or is not a valid submission (its folder under %s says why)", capacity.ErrPointFailed, c, dir)
	}
	return fmt.Errorf("%w: the run at concurrency %d failed or is not a valid submission (its folder says why)", capacity.ErrPointFailed, c)
}

// Before readies the server for the point at concurrency c: drained,
// and with PointOptions.ResetPrefixCache its prefix cache reset. It runs
// before a point, not between the runs of a repeated point (RunRepeated
// resets nothing between runs).
func (p *Points) Before(ctx context.Context, c int) error {
	opt := servermetrics.ResetOptions{Headers: p.headers, DrainTimeout: p.o.DrainTimeout}
	if !p.o.ResetPrefixCache {
		if err := servermetrics.WaitIdle(ctx, p.url, opt); err != nil {
			p.o.Logf("warning: before concurrency %d: %v (the point starts anyway)", c, err)
		}
		return nil
	}
	path, err := servermetrics.ResetAndDrain(ctx, p.url, opt)
	if err != nil {
		return err
	}
	p.o.Logf("before concurrency %d: server idle, prefix cache reset (POST %s)", c, path)
	return nil
}

// notAPointSetting are the flags that change nothing a point or probe
// measures: where it is written, how it is shown, profiling of agentperf
// itself, the sweep table's labels, and the search settings capacity
// compares on its own.
var notAPointSetting = map[string]bool{
	"concurrency": true, "output-artifact-dir": true, "artifact-dir": true, "ui-type": true, "stats-interval": true,
	"no-plot": true, "cpuprofile": true, "memprofile": true, "pprof-addr": true, "drain-timeout": true,
	"tp": true, "config": true, "config-name": true, "dataset-cache-dir": true, "no-dataset-cache": true, "help": true,
	"slo": true, "concurrency-range": true, "resolution": true, "repeats": true,
}

// secretSetting are the flags whose values may hold credentials: the
// settings record a digest of them.
var secretSetting = map[string]bool{"api-key": true, "header": true, "server-metrics-header": true}

// Settings are what every point or probe is made with besides its
// concurrency, for a sweep or search to resume only over points made
// with the same (capacity.SettingsDiff): every flag of flags (name →
// value as the CLI shows it) but those that change nothing measured,
// credentials as a digest and the URL redacted; the AIPERF_* and
// AGENTPERF_* variables of environ but cache folders and anything that
// looks like a credential; and the digest of the corpus loaded.
func (p *Points) Settings(flags map[string]string, environ []string) map[string]string {
	m := map[string]string{}
	for name, v := range flags {
		if notAPointSetting[name] {
			continue
		}
		switch {
		case secretSetting[name] && v != "" && v != "[]":
			sum := sha256.Sum256([]byte(v))
			v = "sha256:" + hex.EncodeToString(sum[:8])
		case name == "url":
			v = RedactURL(v)
		}
		m["--"+name] = v
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "AIPERF_") && !strings.HasPrefix(k, "AGENTPERF_") {
			continue
		}
		if strings.Contains(k, "CACHE_DIR") || strings.Contains(k, "TOKEN") || strings.Contains(k, "KEY") || strings.Contains(k, "SECRET") || strings.Contains(k, "PASSWORD") {
			continue
		}
		m["$"+k] = v
	}
	if l := p.Loaded(); l != nil && l.Corpus != nil {
		m["corpus"] = CorpusDigest(l.Corpus.Identity())
	}
	return m
}
