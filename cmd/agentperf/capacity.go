package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/capacity"
	"github.com/agentperf/agentperf/profile"
	"github.com/agentperf/agentperf/servermetrics"
	"github.com/agentperf/agentperf/sim"
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

// pointRunner runs the points of a sweep or the probes of a search: each
// is the profile run of the flags (a profile.Spec) with its own
// concurrency and folder, reusing one loaded corpus and synthesizer
// (Spec.Loaded), against one server: one in-process simulator for --url
// sim://, started here and shared by every point.
type pointRunner struct {
	pf     *pointFlags
	io     stdio
	url    string // the server every point uses
	base   *profileRun
	spec   profile.Spec // the points' Spec, Loaded set
	loaded *profile.Loaded
	simSr  *sim.Server
	// headers are what the inference requests carry (extra headers and
	// credentials), sent with the reset and the drain's /metrics reads.
	headers http.Header
	logf    func(format string, args ...any)
}

// newPointRunner validates the flags (resolving the first point's run, and
// checking it with check when set, before anything is loaded), loads the
// corpus and synthesizer once and starts the simulator when the URL is
// sim://. Call close when done.
func newPointRunner(ctx context.Context, p *profileFlags, pf *pointFlags, fs *pflag.FlagSet, firstConc int, io stdio, check func(*profile.Spec) error) (_ *pointRunner, err error) {
	for _, f := range []string{"shard", "shard-count", "shard-rendezvous", "shard-join-timeout"} {
		if fs.Changed(f) {
			return nil, usagef("--%s: a sharded sweep or search is not supported yet: run the points on one client", f)
		}
	}
	if pf.drainTimeout <= 0 {
		return nil, usagef("--drain-timeout %g: must be positive (seconds)", pf.drainTimeout)
	}
	if err := p.discoverModel(ctx); err != nil {
		return nil, err
	}
	pr := &pointRunner{pf: pf, io: io, url: p.url,
		logf: func(format string, args ...any) {
			fmt.Fprintf(io.err, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
		}}
	p.concurrency = strconv.Itoa(firstConc)
	if pr.base, err = p.resolve(fs, io); err != nil {
		return nil, err
	}
	pr.spec = pr.base.spec
	if check != nil {
		if err := check(&pr.spec); err != nil {
			return nil, err
		}
	}
	pr.headers = pr.spec.InferenceHeaders()
	pr.loaded, err = profile.Load(ctx, pr.spec)
	var ie *profile.InputError
	if errors.As(err, &ie) {
		return nil, asUsage(ie.Err)
	} else if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			pr.close()
		}
	}()
	pr.spec.Loaded = pr.loaded
	srv, cfg, err := profile.StartSimulator(p.url, p.models[0], pr.loaded.Synth.Tokenizer())
	if errors.As(err, &ie) {
		return nil, asUsage(ie.Err)
	} else if err != nil {
		return nil, err
	}
	if srv != nil {
		pr.simSr, pr.url = srv, srv.URL
		pr.spec.Replay.URL = srv.URL
		pr.logf("in-process simulator serving %q at %s for every point", cfg.Model, srv.URL)
	}
	return pr, nil
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

// settings are what every point or probe is made with besides its
// concurrency: every flag (its value, default or not) but those in
// notAPointSetting, the AIPERF_* and AGENTPERF_* environment (but cache
// folders and anything that looks like a credential), and the digest of
// the corpus loaded. A sweep or search resumes only over points made with
// the same (capacity.SettingsDiff).
func (pr *pointRunner) settings(fs *pflag.FlagSet) map[string]string {
	m := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if notAPointSetting[f.Name] {
			return
		}
		v := f.Value.String()
		switch {
		case secretSetting[f.Name] && v != "" && v != "[]":
			sum := sha256.Sum256([]byte(v))
			v = "sha256:" + hex.EncodeToString(sum[:8])
		case f.Name == "url":
			v = profile.RedactURL(v)
		}
		m["--"+f.Name] = v
	})
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "AIPERF_") && !strings.HasPrefix(k, "AGENTPERF_") {
			continue
		}
		if strings.Contains(k, "CACHE_DIR") || strings.Contains(k, "TOKEN") || strings.Contains(k, "KEY") || strings.Contains(k, "SECRET") || strings.Contains(k, "PASSWORD") {
			continue
		}
		m["$"+k] = v
	}
	if pr.loaded != nil && pr.loaded.Corpus != nil {
		m["corpus"] = profile.CorpusDigest(pr.loaded.Corpus.Identity())
	}
	return m
}

func (pr *pointRunner) close() {
	if pr.simSr != nil {
		pr.simSr.Close()
	}
	pr.loaded.Close()
}

// run is a capacity.PointFunc: the profile run at concurrency c into dir.
// A run that finished but failed or is not valid wraps
// capacity.ErrPointFailed.
func (pr *pointRunner) run(ctx context.Context, c int, dir string) error {
	s := pr.spec
	s.Replay.Concurrency = c
	s.OutputDir = dir
	// The sweep owns its points' folders: a point it runs again (one
	// that did not finish) replaces what is there.
	s.OverwriteArtifacts = true
	s.Replay.KillNow = claimKillSwitch(ctx)
	err := runSpec(ctx, s, pr.io)
	if errors.Is(err, errRunFailed) {
		return fmt.Errorf("%w: the run at concurrency %d failed or is not a valid submission (its folder says why)", capacity.ErrPointFailed, c)
	}
	return err
}

// before readies the server for a point: drained, and with
// --reset-prefix-cache its prefix cache reset. Without the flag a server
// whose /metrics cannot say it is idle is a warning, not an error.
func (pr *pointRunner) before(ctx context.Context, c int) error {
	opt := servermetrics.ResetOptions{Headers: pr.headers, DrainTimeout: time.Duration(pr.pf.drainTimeout * float64(time.Second))}
	if !pr.pf.reset {
		if err := servermetrics.WaitIdle(ctx, pr.url, opt); err != nil {
			pr.logf("warning: before concurrency %d: %v (the point starts anyway)", c, err)
		}
		return nil
	}
	path, err := servermetrics.ResetAndDrain(ctx, pr.url, opt)
	if err != nil {
		return err
	}
	pr.logf("before concurrency %d: server idle, prefix cache reset (POST %s)", c, path)
	return nil
}
