package scenario

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/timing"
)

// inferenceX returns the Settings the exact argv of InferenceX's launcher
// (benchmark_lib.sh) produces at v0.2, v0.3 and HEAD, as the CLI maps them:
// only what the command line sets is Set.
func inferenceX(version string) Settings {
	s := Settings{
		Streaming:           Some(true),               // --streaming
		Concurrency:         []int{64},                // --concurrency $CONC
		BenchmarkDuration:   Some(1800 * time.Second), // --benchmark-duration
		RandomSeed:          Some(int64(42)),
		UseServerTokenCount: Some(true),
		TrajectoryMinRatio:  Some(0.25),
		TrajectoryMaxRatio:  Some(0.75),
		Loader:              LoaderPublic,
	}
	switch version {
	case "v0.2":
		s.PublicDataset = "semianalysis_cc_traces_weka"
	case "v0.3":
		s.PublicDataset = "semianalysis_cc_traces_weka_with_subagents"
	case "v0.3-256k":
		s.PublicDataset = "semianalysis_cc_traces_weka_with_subagents_256k"
	case "HEAD":
		s.BenchmarkDuration = Some(3600 * time.Second)
		s.TraceIdleGapCap = Some(300 * time.Second) // --trace-idle-gap-cap-seconds 300
		s.PublicDataset = "semianalysis_cc_traces_weka_062126_256k"
		// --extra-inputs $AIPERF_EXTRA_INPUTS, e.g. a chat-template switch.
		s.ExtraInputs = []ExtraInput{{Key: "chat_template_kwargs", Value: map[string]any{"enable_thinking": false}}}
	}
	return s
}

func TestPresetAcceptsInferenceXArgv(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ argv, gen string }{{"v0.2", "v0.2"}, {"v0.3", "v0.3"}, {"v0.3", "v0.3-early"}, {"v0.3-256k", "v0.3"}, {"HEAD", "v1.0"}} {
		t.Run(c.argv+"@"+c.gen, func(t *testing.T) {
			p, err := Lookup(NameAgentXMVP + "@" + c.gen)
			if err != nil {
				t.Fatal(err)
			}
			s := inferenceX(c.argv)
			if vs := p.Apply(&s); len(vs) != 0 {
				t.Fatalf("violations for InferenceX %s argv: %q", c.argv, vs)
			}
			// The scenario's locked values are now in force: v0.2's
			// per-turn delay cap, v0.3's trace idle-gap cap.
			var caps bool
			switch c.gen {
			case "v0.2":
				caps = s.InterTurnDelayCap == Some(60*time.Second) && !s.TraceIdleGapCap.Set
			case "v1.0":
				caps = s.SystemIdleGapCap == Some(10*time.Second) && s.TraceIdleGapCap == Some(300*time.Second) && !s.InterTurnDelayCap.Set
			default:
				caps = s.TraceIdleGapCap == Some(60*time.Second) && !s.InterTurnDelayCap.Set
			}
			if !s.IgnoreEOS.V || s.CacheBust.V != CacheBustFirstTurnPrefix || !caps ||
				s.TimingMode != TimingAgenticReplay || !s.Streaming.V || s.RandomSeed.V != 42 {
				t.Errorf("settings after Apply: %+v", s)
			}
			reasons, err := p.Enforce(&s)
			if err != nil || reasons != nil {
				t.Errorf("Enforce = %v, %v; want a clean run", reasons, err)
			}
		})
	}
}

func TestPresetFillsDefaults(t *testing.T) {
	t.Parallel()
	p, _ := Lookup(NameAgentXMVP + "@v0.2")
	s := Settings{Concurrency: []int{4}, Loader: LoaderLocal, SeedSource: func() int64 { return 987 }}
	if vs := p.Apply(&s); len(vs) != 0 {
		t.Fatalf("violations: %q", vs)
	}
	checks := map[string]bool{
		"streaming on":             s.Streaming == Some(true),
		"ignore_eos on":            s.IgnoreEOS == Some(true),
		"cache bust":               s.CacheBust == Some(CacheBustFirstTurnPrefix),
		"duration 1800 s":          s.BenchmarkDuration == Some(1800*time.Second),
		"seed auto-filled":         s.RandomSeed == Some(int64(987)),
		"delay cap 60 s":           s.InterTurnDelayCap == Some(60*time.Second),
		"server token count":       s.UseServerTokenCount == Some(true),
		"ratios 0.25/0.75":         s.TrajectoryMinRatio == Some(0.25) && s.TrajectoryMaxRatio == Some(0.75),
		"timing mode":              s.TimingMode == TimingAgenticReplay,
		"seed logged":              slices.ContainsFunc(s.Filled, func(l string) bool { return strings.Contains(l, "random_seed=987") }),
		"one log line per default": len(s.Filled) == 9,
	}
	for name, ok := range checks {
		if !ok {
			t.Errorf("%s: settings %+v", name, s)
		}
	}
	// Explicit values the scenario does not lock are kept.
	s = Settings{Concurrency: []int{4}, Loader: LoaderLocal, UseServerTokenCount: Some(false), TrajectoryMinRatio: Some(0.1), TrajectoryMaxRatio: Some(0.9)}
	if vs := p.Apply(&s); len(vs) != 0 || s.UseServerTokenCount.V || s.TrajectoryMinRatio.V != 0.1 || s.TrajectoryMaxRatio.V != 0.9 || s.RandomSeed != Some(int64(0)) {
		t.Errorf("explicit unlocked values changed: %q %+v", vs, s)
	}
}

func TestPresetViolations(t *testing.T) {
	t.Parallel()
	p, _ := Lookup(NameAgentXMVP + "@v0.2")
	for _, c := range []struct {
		name     string
		mutate   func(*Settings)
		flag     string
		hard     bool // not liftable by --unsafe-override
		postLock func(*Settings) bool
	}{
		{"request rate", func(s *Settings) { s.SchedulingFlags = []string{"--request-rate"} }, "--request-rate", false, nil},
		{"fixed schedule", func(s *Settings) { s.SchedulingFlags = []string{"--fixed-schedule"} }, "--fixed-schedule", false, nil},
		{"other timing mode", func(s *Settings) { s.TimingMode = "request_rate" }, "timing mode", false, nil},
		{"no streaming", func(s *Settings) { s.Streaming = Some(false) }, "--streaming", false, func(s *Settings) bool { return s.Streaming == Some(false) }},
		{"ignore_eos false in extra inputs", func(s *Settings) {
			s.ExtraInputs = []ExtraInput{{"ignore_eos", false}, {"temperature", 0.0}}
		}, "--extra-inputs ignore_eos", false, func(s *Settings) bool { return s.IgnoreEOS == Some(false) && len(s.ExtraInputs) == 1 }},
		{"ignore_eos string false", func(s *Settings) { s.ExtraInputs = []ExtraInput{{"ignore_eos", "false"}} }, "--extra-inputs ignore_eos", false, nil},
		{"ignore_eos off", func(s *Settings) { s.IgnoreEOS = Some(false) }, "--extra-inputs ignore_eos", false, nil},
		{"cache bust none", func(s *Settings) { s.CacheBust = Some(CacheBustNone) }, "--cache-bust", false, func(s *Settings) bool { return s.CacheBust == Some(CacheBustNone) }},
		{"legacy system_prefix", func(s *Settings) { s.CacheBust = Some(CacheBustSystemPrefix) }, "--cache-bust", false, nil},
		{"short duration", func(s *Settings) { s.BenchmarkDuration = Some(899 * time.Second) }, "--benchmark-duration", false, func(s *Settings) bool { return s.BenchmarkDuration.V == 899*time.Second }},
		{"concurrency sweep", func(s *Settings) { s.Concurrency = []int{4, 8} }, "--concurrency", false, nil},
		{"no concurrency", func(s *Settings) { s.Concurrency = nil }, "--concurrency", false, nil},
		{"delay cap 30", func(s *Settings) { s.InterTurnDelayCap = Some(30 * time.Second) }, "--inter-turn-delay-cap-seconds", false, func(s *Settings) bool { return s.InterTurnDelayCap == Some(30*time.Second) }},
		{"ignore trace delays", func(s *Settings) { s.IgnoreTraceDelays = true }, "--ignore-trace-delays", false, nil},
		{"synthesis max isl", func(s *Settings) { s.SynthesisMaxISL = Some(100000) }, "--synthesis-max-isl", false, nil},
		{"other public dataset", func(s *Settings) { s.PublicDataset = "sharegpt" }, "--public-dataset", false, nil},
		{"other HF repo", func(s *Settings) { s.Loader, s.HFDataset = LoaderHF, "example/not-agentx" }, "--hf-dataset", false, nil},
		{"synthetic corpus", func(s *Settings) { s.Loader = LoaderSynthetic }, "--public-dataset", true, nil},
		{"no corpus", func(s *Settings) { s.Loader = LoaderUnset }, "--public-dataset", true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := inferenceX("v0.3")
			c.mutate(&s)
			vs := p.Apply(&s)
			if len(vs) != 1 || !strings.HasPrefix(vs[0], c.flag+": ") {
				t.Fatalf("violations %q, want exactly one for %s", vs, c.flag)
			}
			if c.postLock != nil && !c.postLock(&s) {
				t.Errorf("settings after Apply: %+v", s)
			}
			// Apply is idempotent: the broken lock is reported again.
			if again := p.Apply(&s); !slices.Equal(again, vs) {
				t.Errorf("second Apply = %q, want %q", again, vs)
			}
			s = inferenceX("v0.3")
			c.mutate(&s)
			if _, err := p.Enforce(&s); err == nil || !strings.Contains(err.Error(), c.flag) {
				t.Errorf("Enforce without --unsafe-override: %v, want an error naming %s", err, c.flag)
			}
			s = inferenceX("v0.3")
			c.mutate(&s)
			s.UnsafeOverride = true
			reasons, err := p.Enforce(&s)
			switch {
			case c.hard && (err == nil || !strings.Contains(err.Error(), "cannot lift")):
				t.Errorf("Enforce with --unsafe-override = %v, %v; want a refusal", reasons, err)
			case !c.hard && (err != nil || !slices.Equal(reasons, []string{ReasonUnsafeOverride})):
				t.Errorf("Enforce with --unsafe-override = %v, %v; want reason unsafe_override", reasons, err)
			}
		})
	}
}

func TestPresetListsAllViolations(t *testing.T) {
	t.Parallel()
	p, _ := Lookup(NameAgentXMVP + "@v0.2")
	s := inferenceX("v0.2")
	s.Streaming = Some(false)
	s.BenchmarkDuration = Some(300 * time.Second)
	s.Concurrency = []int{1, 2, 4}
	s.SynthesisMaxISL = Some(1)
	s.IgnoreTraceDelays = true
	vs := p.Apply(&s)
	if len(vs) != 5 {
		t.Fatalf("violations %q, want 5", vs)
	}
	_, err := p.Enforce(&s)
	if err == nil {
		t.Fatal("no error")
	}
	for _, f := range []string{"--streaming", "--benchmark-duration", "--concurrency", "--synthesis-max-isl", "--ignore-trace-delays", "--unsafe-override"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error does not mention %s:\n%v", f, err)
		}
	}
	// InferenceX adds --unsafe-override for a short smoke run: it runs,
	// invalid.
	s = inferenceX("v0.3")
	s.BenchmarkDuration = Some(120 * time.Second)
	s.UnsafeOverride = true
	if reasons, err := p.Enforce(&s); err != nil || !slices.Equal(reasons, []string{ReasonUnsafeOverride}) || s.BenchmarkDuration.V != 120*time.Second {
		t.Errorf("short run with --unsafe-override: %v %v, duration %v", reasons, err, s.BenchmarkDuration.V)
	}
	// --unsafe-override without anything to lift leaves the run valid.
	s = inferenceX("v0.3")
	s.UnsafeOverride = true
	if reasons, err := p.Enforce(&s); err != nil || reasons != nil {
		t.Errorf("clean run with --unsafe-override: %v %v", reasons, err)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	if p, err := Lookup("inferencex-agentx-mvp"); err != nil || p.Name != NameAgentXMVP {
		t.Fatalf("Lookup = %v, %v", p, err)
	}
	if p, err := Lookup("agentx"); err != nil || p.Name != NameAgentX || p.Generation.Name != AgentXGeneration {
		t.Fatalf("Lookup(agentx) = %v, %v", p, err)
	}
	_, err := Lookup("agentx-harness")
	if err == nil || !strings.Contains(err.Error(), "inferencex-agentx-mvp, agentx") || !strings.Contains(err.Error(), `"agentx-harness"`) {
		t.Fatalf("unknown scenario error %v, want one naming it and listing the presets", err)
	}
	for _, g := range timing.GenerationNames() {
		p, err := Lookup(NameAgentXMVP + "@" + g)
		if err != nil || p.Generation.Name != g {
			t.Errorf("Lookup @%s = %+v, %v", g, p, err)
		}
	}
	if p, err := LookupAt(NameAgentXMVP, "v0.2"); err != nil || p.Generation.Name != "v0.2" {
		t.Errorf("LookupAt(v0.2) = %+v, %v", p, err)
	}
	if _, err := LookupAt(NameAgentXMVP+"@v0.3", "v0.2"); err == nil || !strings.Contains(err.Error(), "set it once") {
		t.Errorf("conflicting generations: %v, want a refusal", err)
	}
	if _, err := Lookup(NameAgentXMVP + "@v9"); !errors.Is(err, timing.ErrGeneration) || !strings.Contains(err.Error(), "v0.2, v0.3-early, v0.3, v1.0") {
		t.Errorf("unknown generation: %v, want timing.ErrGeneration listing the generations", err)
	}
}

// TestV03TraceIdleGapCapLocked: v0.3 fills the trace idle-gap cap with 60 s
// and treats another value as a broken lock; its inter-turn delay cap is
// not a lock.
func TestV03TraceIdleGapCapLocked(t *testing.T) {
	t.Parallel()
	p, _ := Lookup(NameAgentXMVP + "@v0.3")
	s := inferenceX("v0.3")
	s.TraceIdleGapCap = Some(300 * time.Second)
	s.InterTurnDelayCap = Some(5 * time.Second)
	if vs := p.Apply(&s); len(vs) != 1 || !strings.HasPrefix(vs[0], "--trace-idle-gap-cap-seconds: locked to 60") {
		t.Fatalf("violations %q, want only the trace idle-gap cap", vs)
	}
}

// TestV10Preset: the v1.0 scenario's locks and defaults — the 10 s system
// idle cap filled (another value a violation), the per-turn delay cap
// forbidden, start ratios 0/1 when unset, the trace idle cap allowed, only
// the 14 corpus aliases (a local corpus needs --unsafe-override).
func TestV10Preset(t *testing.T) {
	t.Parallel()
	p, _ := Lookup(NameAgentXMVP + "@v1.0")
	if len(V10Aliases()) != 14 {
		t.Fatalf("%d v1.0 aliases, want 14", len(V10Aliases()))
	}
	s := Settings{Concurrency: []int{8}, Loader: LoaderPublic, PublicDataset: "semianalysis_cc_traces_weka_062126"}
	if vs := p.Apply(&s); len(vs) != 0 {
		t.Fatalf("violations %q", vs)
	}
	if s.SystemIdleGapCap != Some(10*time.Second) || s.TrajectoryMinRatio != Some(0.0) || s.TrajectoryMaxRatio != Some(1.0) || s.TraceIdleGapCap.Set {
		t.Errorf("after Apply: %+v", s)
	}
	for _, c := range []struct {
		name   string
		mutate func(*Settings)
		flag   string
	}{
		{"system idle cap", func(s *Settings) { s.SystemIdleGapCap = Some(30 * time.Second) }, "--system-idle-gap-cap-seconds"},
		{"delay cap", func(s *Settings) { s.InterTurnDelayCap = Some(60 * time.Second) }, "--inter-turn-delay-cap-seconds"},
		{"old alias", func(s *Settings) { s.PublicDataset = "semianalysis_cc_traces_weka" }, "--public-dataset"},
		{"other repo", func(s *Settings) { s.Loader, s.HFDataset = LoaderHF, "semianalysisai/cc-traces-weka-061526@main" }, "--hf-weka-dataset"},
		{"local corpus", func(s *Settings) { s.Loader = LoaderLocal }, "--input-file"},
	} {
		s := Settings{Concurrency: []int{8}, Loader: LoaderPublic, PublicDataset: "semianalysis_cc_traces_weka_062126_256k"}
		c.mutate(&s)
		vs := p.Apply(&s)
		if len(vs) != 1 || !strings.HasPrefix(vs[0], c.flag+": ") {
			t.Errorf("%s: violations %q, want one for %s", c.name, vs, c.flag)
		}
	}
	s = Settings{Concurrency: []int{8}, Loader: LoaderHF, HFDataset: "semianalysisai/cc-traces-weka-062126@main", TraceIdleGapCap: Some(300 * time.Second)}
	if vs := p.Apply(&s); len(vs) != 0 {
		t.Errorf("pinned HF repo with a trace idle cap: %q", vs)
	}
}

// TestAgentXPreset: `agentx` is the MVP's locks at its one generation, 3600 s
// and 0.25/0.75 as defaults, and every soft default of the harness's
// cli_defaults filled where the user set nothing.
func TestAgentXPreset(t *testing.T) {
	t.Parallel()
	p, err := Lookup(NameAgentX)
	if err != nil {
		t.Fatal(err)
	}
	mvp, _ := Lookup(NameAgentXMVP + "@" + AgentXGeneration)
	// The locks are the MVP's.
	if p.MinDuration != mvp.MinDuration || p.SystemIdleCap != mvp.SystemIdleCap || !p.ForbidDelayCap || p.CacheBust != mvp.CacheBust ||
		!slices.Equal(p.Aliases, mvp.Aliases) || !slices.Equal(p.HFRepos, mvp.HFRepos) || p.CoverageRatio != 0.95 || mvp.CoverageRatio != 0.95 {
		t.Errorf("agentx locks differ from the MVP's: %+v vs %+v", p, mvp)
	}
	// The InferenceX f4289c7f argv: only what the preset does not own.
	s := Settings{Concurrency: []int{8}, Loader: LoaderPublic, PublicDataset: "semianalysis_cc_traces_weka_062126_256k"}
	if vs := p.Apply(&s); len(vs) != 0 {
		t.Fatalf("violations %q", vs)
	}
	for name, ok := range map[string]bool{
		"duration 3600":        s.BenchmarkDuration == Some(3600*time.Second),
		"ratios 0.25/0.75":     s.TrajectoryMinRatio == Some(0.25) && s.TrajectoryMaxRatio == Some(0.75),
		"streaming":            s.Streaming == Some(true),
		"stats every 30 s":     s.StatsInterval == Some(30*time.Second),
		"seed 42":              s.RandomSeed == Some(int64(42)),
		"threshold 0.10":       s.FailedRequestThreshold == Some(0.10),
		"10 warmup per lane":   s.WarmupRequestsPerLane == Some(10),
		"warmup grace 1800 s":  s.WarmupGracePeriod == Some(1800*time.Second),
		"trace idle cap 300 s": s.TraceIdleGapCap == Some(300*time.Second),
		"server token counts":  s.UseServerTokenCount == Some(true),
		"no GPU telemetry":     s.NoGPUTelemetry == Some(true),
		"393 entries":          s.NumDatasetEntries == Some(393),
		"1 s slices":           s.SliceDuration == Some(time.Second),
		"system idle cap 10 s": s.SystemIdleGapCap == Some(10*time.Second),
		"seed not auto-filled": slices.Contains(s.Filled, "random_seed=42 (filled by scenario agentx)"),
	} {
		if !ok {
			t.Errorf("%s: %+v", name, s)
		}
	}
	// Explicit flags win; the two exceptions.
	s = Settings{Concurrency: []int{8}, Loader: LoaderPublic, PublicDataset: "semianalysis_cc_traces_weka_062126",
		BenchmarkDuration: Some(1200 * time.Second), UseServerTokenCount: Some(false), NoGPUTelemetry: Some(false),
		AgenticCacheWarmup: Some(60 * time.Second), RandomSeed: Some(int64(7)), TrajectoryMinRatio: Some(0.0)}
	vs := p.Apply(&s)
	if s.BenchmarkDuration.V != 1200*time.Second || s.UseServerTokenCount.V || s.NoGPUTelemetry.V || s.WarmupRequestsPerLane.Set ||
		s.RandomSeed.V != 7 || s.TrajectoryMinRatio.V != 0 || s.TrajectoryMaxRatio.V != 0.75 {
		t.Errorf("explicit settings not kept: %+v", s)
	}
	if len(vs) != 0 {
		t.Errorf("violations %q (the duration is at the floor's right side)", vs)
	}
	// A generation other than its own is refused.
	if _, err := LookupAt(NameAgentX, "v0.3"); err == nil || !strings.Contains(err.Error(), "replays AgentX "+AgentXGeneration+" only") {
		t.Errorf("agentx at v0.3: %v", err)
	}
	if p, err := LookupAt(NameAgentX, AgentXGeneration); err != nil || p.Name != NameAgentX {
		t.Errorf("agentx at its own generation: %v", err)
	}
}

// TestAgentXEnvironmentDefaults: the preset's variables apply where unset
// and an explicit variable wins; the MVP has none.
func TestAgentXEnvironmentDefaults(t *testing.T) {
	t.Parallel()
	p, _ := Lookup(NameAgentX)
	env := map[string]string{"AIPERF_HTTP_TCP_USER_TIMEOUT": "450000"}
	get := p.Getenv(func(k string) string { return env[k] })
	if get("AIPERF_HTTP_TCP_USER_TIMEOUT") != "450000" || get("AIPERF_DATASET_CONFIGURATION_TIMEOUT") != "1800" ||
		get("AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT") != "1800" || get("AIPERF_UI_REALTIME_METRICS_ENABLED") != "true" || get("HOME") != "" {
		t.Error("Getenv does not layer the defaults under the environment")
	}
	out, applied := p.Environ([]string{"AIPERF_HTTP_TCP_USER_TIMEOUT=450000", "PATH=/bin"})
	if len(out) != 5 || len(applied) != 3 || slices.Contains(out, "AIPERF_HTTP_TCP_USER_TIMEOUT=900000") {
		t.Errorf("Environ = %q, applied %q", out, applied)
	}
	if _, applied := p.Environ(nil); !slices.ContainsFunc(applied, func(l string) bool { return strings.HasPrefix(l, "AIPERF_HTTP_TCP_USER_TIMEOUT=900000 ") }) {
		t.Errorf("the TCP user timeout default was not applied: %q", applied)
	}
	mvp, _ := Lookup(NameAgentXMVP)
	if _, applied := mvp.Environ(nil); len(applied) != 0 {
		t.Errorf("the MVP applied environment defaults: %q", applied)
	}
}

// TestPresetsTable: every preset of the table is listed and found by name.
func TestPresetsTable(t *testing.T) {
	t.Parallel()
	ps := Presets()
	if len(ps) != 2 || ps[0].Name != NameAgentXMVP || ps[1].Name != NameAgentX || !slices.Equal(Names(), []string{NameAgentXMVP, NameAgentX}) {
		t.Fatalf("Presets = %v", Names())
	}
}

// TestSyntheticCorpusNotBypassable: a synthetic corpus is an error that
// --unsafe-override does not lift, and the message says what to pass.
func TestSyntheticCorpusNotBypassable(t *testing.T) {
	t.Parallel()
	for _, name := range []string{NameAgentX, NameAgentXMVP} {
		p, _ := Lookup(name)
		s := Settings{Concurrency: []int{8}, Loader: LoaderSynthetic, PublicDataset: "synthetic", UnsafeOverride: true}
		_, err := p.Enforce(&s)
		if err == nil || !strings.Contains(err.Error(), "cannot lift") || !strings.Contains(err.Error(), "--public-dataset semianalysis_cc_traces_weka_062126") ||
			!strings.Contains(err.Error(), "--hf-weka-dataset "+AgentXHFRepo) {
			t.Errorf("%s: synthetic corpus with --unsafe-override: %v", name, err)
		}
	}
}
