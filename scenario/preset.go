package scenario

import (
	"fmt"
	"github.com/agentperf/agentperf/internal/suggest"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentperf/agentperf/timing"
)

// Opt is an optional setting: Set says whether the user (or a preset) gave
// a value, so a preset can tell "unset, fill the default" from "set to the
// default's opposite, a violation".
type Opt[T any] struct {
	V   T
	Set bool
}

// Some returns a set Opt holding v.
func Some[T any](v T) Opt[T] { return Opt[T]{V: v, Set: true} }

// LoaderKind is where the corpus comes from.
type LoaderKind int

// The loader kinds.
const (
	// LoaderUnset: no dataset was given.
	LoaderUnset LoaderKind = iota
	// LoaderPublic: --public-dataset <alias> (Settings.PublicDataset).
	LoaderPublic
	// LoaderHF: a Hugging Face dataset repo given directly
	// (Settings.HFDataset, "org/name[@rev]").
	LoaderHF
	// LoaderLocal: weka traces from local files (a JSONL file or a
	// directory of JSON traces): aiperf's weka_trace loader.
	LoaderLocal
	// LoaderSynthetic: a generated corpus (--public-dataset synthetic).
	LoaderSynthetic
)

// ExtraInput is one --extra-inputs key:value pair, the value already
// decoded (JSON scalars become bool, float64 or string).
type ExtraInput struct {
	Key   string
	Value any
}

// TimingAgenticReplay is the only timing mode the scenario allows.
const TimingAgenticReplay = "agentic_replay"

// Settings are the run settings a scenario can fill or lock. The CLI (or a
// library caller) fills it from flags, marking what the user set; Apply then
// fills defaults in place and reports violations. After Apply every Opt the
// preset owns is Set (to the user's value when it broke a lock).
type Settings struct {
	// TimingMode: "" or TimingAgenticReplay.
	TimingMode string
	// SchedulingFlags names every load-control flag the user passed that
	// replaces agentic replay (--request-rate, --user-centric-rate,
	// --fixed-schedule, --arrival-pattern, --adaptive-scale, …).
	SchedulingFlags []string
	// Streaming is --streaming.
	Streaming Opt[bool]
	// IgnoreEOS is ignore_eos in the request body. Apply folds an
	// ignore_eos entry of ExtraInputs into it (and removes the entry), so
	// the engine reads it from here only.
	IgnoreEOS Opt[bool]
	// ExtraInputs are the --extra-inputs pairs, in order.
	ExtraInputs []ExtraInput
	// CacheBust is --cache-bust.
	CacheBust Opt[CacheBust]
	// BenchmarkDuration is --benchmark-duration.
	BenchmarkDuration Opt[time.Duration]
	// Concurrency holds every --concurrency value given (a sweep has
	// several); the scenario requires exactly one.
	Concurrency []int
	// RandomSeed is --random-seed.
	RandomSeed Opt[int64]
	// SeedSource draws a seed when RandomSeed is unset and the preset
	// auto-fills it (the caller owns the randomness); nil fills 0.
	SeedSource func() int64
	// InterTurnDelayCap is --inter-turn-delay-cap-seconds.
	InterTurnDelayCap Opt[time.Duration]
	// TraceIdleGapCap is --trace-idle-gap-cap-seconds.
	TraceIdleGapCap Opt[time.Duration]
	// SystemIdleGapCap is --system-idle-gap-cap-seconds.
	SystemIdleGapCap Opt[time.Duration]
	// IgnoreTraceDelays is --ignore-trace-delays.
	IgnoreTraceDelays bool
	// UseServerTokenCount is --use-server-token-count.
	UseServerTokenCount Opt[bool]
	// TrajectoryMinRatio and TrajectoryMaxRatio are
	// --trajectory-start-min-ratio / --trajectory-start-max-ratio.
	TrajectoryMinRatio, TrajectoryMaxRatio Opt[float64]
	// SynthesisMaxISL is --synthesis-max-isl (input truncation).
	SynthesisMaxISL Opt[int]
	// Loader, PublicDataset and HFDataset say where the corpus comes from.
	Loader        LoaderKind
	PublicDataset string
	HFDataset     string
	// UnsafeOverride is --unsafe-override (or AIPERF_UNSAFE_OVERRIDE=true).
	UnsafeOverride bool

	// Filled is written by Apply: one human-readable line per default it
	// filled in ("random_seed=123 (auto-filled …)"), for the run log.
	Filled []string
}

// Violation is one broken lock.
type Violation struct {
	// Flag is the flag (or setting) at fault.
	Flag string
	// Message says what is wrong and what to do.
	Message string
	// Bypassable is false for locks --unsafe-override cannot lift (a
	// synthetic or missing corpus).
	Bypassable bool
}

// String returns "flag: message".
func (v Violation) String() string { return v.Flag + ": " + v.Message }

// Preset is a named scenario: defaults and locks applied to Settings.
type Preset struct {
	// Name is the --scenario value.
	Name string
	// Doc is a one-line description.
	Doc string
	// Generation is the AgentX generation whose rules the preset applies.
	Generation timing.Generation
	// MinDuration and DefaultDuration bound --benchmark-duration.
	MinDuration, DefaultDuration time.Duration
	// DelayCap is the locked inter-turn delay cap (v0.2; 0: not locked).
	DelayCap time.Duration
	// IdleGapCap is the locked trace idle gap cap (v0.3; 0: not locked).
	IdleGapCap time.Duration
	// SystemIdleCap is the locked system idle cap (v1.0; 0: none).
	SystemIdleCap time.Duration
	// ForbidDelayCap rejects --inter-turn-delay-cap-seconds (v1.0).
	ForbidDelayCap bool
	// Aliases, when set, are the only corpus aliases allowed, and HFRepos
	// the only HF repos (v1.0); a local corpus then needs
	// --unsafe-override. Otherwise PublicPrefix and HFPrefix apply.
	Aliases, HFRepos []string
	// CacheBust is the locked cache-bust target.
	CacheBust CacheBust
	// MinRatio and MaxRatio are the default trajectory start ratios.
	MinRatio, MaxRatio float64
	// PublicPrefix and HFPrefix are the allowed corpus aliases / repos
	// (prefix match).
	PublicPrefix, HFPrefix string
	// NoGPUTelemetry is the preset's soft default of no GPU telemetry
	// (aiperf's agentx cli_defaults no_gpu_telemetry): it applies unless
	// --gpu-telemetry or AIPERF_GPU_TELEMETRY_URL asks for telemetry.
	NoGPUTelemetry bool
}

// NameAgentXMVP is the InferenceX scenario name.
const NameAgentXMVP = "inferencex-agentx-mvp"

// AgentXMVP returns the `inferencex-agentx-mvp` preset of the default
// generation (see AgentXMVPOf).
func AgentXMVP() *Preset {
	g, err := timing.LookupGeneration("")
	if err != nil {
		panic(err)
	}
	return AgentXMVPOf(g)
}

// AgentXMVPOf returns the `inferencex-agentx-mvp` preset as InferenceX ran
// it at generation g. Its rules, every generation:
//
//   - timing mode agentic_replay; request-rate, user-centric,
//     fixed-schedule, arrival-pattern and adaptive-scale flags are
//     forbidden;
//   - ignore_eos=true is injected; ignore_eos:false in --extra-inputs is a
//     violation;
//   - streaming is required and turned on when not given; an explicit
//     false is a violation;
//   - --cache-bust is locked to first_turn_prefix and filled when unset;
//   - --benchmark-duration ≥ 900 s, 1800 s when unset;
//   - --concurrency must be one integer, not a sweep;
//   - --random-seed is auto-filled when absent (from Settings.SeedSource),
//     and the filled value logged;
//   - --ignore-trace-delays is forbidden;
//   - --synthesis-max-isl is forbidden: no input truncation;
//   - --use-server-token-count defaults to on; not a lock;
//   - trajectory start ratios default to 0.25 / 0.75; not a lock;
//   - the corpus must be a SemiAnalysis weka corpus: a
//     `semianalysis_cc_traces_weka*` alias, a `semianalysisai/cc-traces-weka*`
//     HF repo, or local weka trace files; a synthetic or missing corpus is
//     a violation that --unsafe-override cannot lift (as aiperf).
//
// v0.2 locks --inter-turn-delay-cap-seconds at 60 s (filled when unset).
// v0.3 locks --trace-idle-gap-cap-seconds at 60 s (filled when unset);
// its inter-turn delay cap is not a lock (the warp replaces it).
//
// Every other violation can be lifted with --unsafe-override; the run then
// goes ahead with the user's values but is not a valid submission (reason
// unsafe_override). --unsafe-override with nothing to lift changes nothing.
func AgentXMVPOf(g timing.Generation) *Preset {
	p := &Preset{
		Name:            NameAgentXMVP,
		Generation:      g,
		MinDuration:     900 * time.Second,
		DefaultDuration: 1800 * time.Second,
		CacheBust:       CacheBustFirstTurnPrefix,
		MinRatio:        timing.DefaultStartMinRatio,
		MaxRatio:        timing.DefaultStartMaxRatio,
		PublicPrefix:    "semianalysis_cc_traces_weka",
		HFPrefix:        "semianalysisai/cc-traces-weka",
	}
	// The locks follow the generation's delay rule: a per-turn cap, a
	// load-time warp, or runtime idle caps.
	switch g.Delay {
	case timing.DelayThinkTime:
		p.DelayCap = timing.DefaultInterTurnDelayCap
		p.Doc = "InferenceX AgentX MVP, " + g.Name + ": agentic replay, streaming, ignore_eos, first_turn_prefix cache bust, 60 s delay cap, ≥ 900 s"
	case timing.DelayWarpedStart:
		p.IdleGapCap = timing.DefaultV03IdleGapCap
		p.Doc = "InferenceX AgentX MVP, " + g.Name + ": session trees, streaming, ignore_eos, first_turn_prefix cache bust, 60 s trace idle-gap warp, ≥ 900 s"
	case timing.DelayEndToStart:
		p.SystemIdleCap = timing.DefaultSystemIdleCap
		p.ForbidDelayCap = true
		p.MinRatio, p.MaxRatio = 0, 1
		p.Aliases = V10Aliases()
		p.HFRepos = []string{"semianalysisai/cc-traces-weka-062126"}
		p.Doc = "InferenceX AgentX MVP, " + g.Name + ": session trees, streaming, ignore_eos, first_turn_prefix cache bust, end-to-start delays, 10 s system idle cap, ≥ 900 s"
	}
	return p
}

// V10Aliases are the corpus aliases the v1.0 scenario allows: the ones
// InferenceX's launcher can pass today.
func V10Aliases() []string {
	var out []string
	for _, d := range []string{"with_subagents", "with_subagents_060226", "with_subagents_060526", "with_subagents_060826", "061326", "061526", "062126"} {
		out = append(out, "semianalysis_cc_traces_weka_"+d, "semianalysis_cc_traces_weka_"+d+"_256k")
	}
	return out
}

// Presets returns every preset by name, at the default generation.
func Presets() map[string]*Preset {
	p := AgentXMVP()
	return map[string]*Preset{p.Name: p}
}

// Lookup returns the preset called name, which may carry a generation
// after "@" ("inferencex-agentx-mvp@v0.2"); without one the preset is at
// generation gen ("" for the default). An unknown name is an error that
// lists the presets, an unknown generation one that lists the generations.
func Lookup(name string) (*Preset, error) { return LookupAt(name, "") }

// LookupAt is Lookup with the generation to use when name carries none. A
// name that carries a generation different from gen (both given) is an
// error.
func LookupAt(name, gen string) (*Preset, error) {
	base, suffix := SplitScenario(name)
	if base != NameAgentXMVP {
		names := []string{NameAgentXMVP}
		return nil, fmt.Errorf("--scenario %q: unknown scenario%s; known scenarios: %s (optionally @%s)", name, suggest.DidYouMean(base, names), strings.Join(names, ", "), strings.Join(timing.GenerationNames(), "|"))
	}
	if suffix != "" && gen != "" && suffix != gen {
		return nil, fmt.Errorf("--scenario %q selects AgentX %s but the generation was also set to %s: set it once", name, suffix, gen)
	}
	if suffix == "" {
		suffix = gen
	}
	g, err := timing.LookupGeneration(suffix)
	if err != nil {
		return nil, fmt.Errorf("--scenario %q: %w", name, err)
	}
	return AgentXMVPOf(g), nil
}

// Apply fills the preset's defaults into s (only where the setting is
// unset) and returns every violated lock as "flag: message" (nil when
// none). A value that breaks a lock is kept as the user gave it, so with
// --unsafe-override the run does what was asked (as aiperf does), and
// Apply is idempotent: a second call reports the same violations and fills
// nothing. Use Enforce to turn the result into a decision.
func (p *Preset) Apply(s *Settings) (violations []string) {
	for _, v := range p.check(s) {
		violations = append(violations, v.String())
	}
	return violations
}

// Enforce applies the preset and decides: no violation → run, valid so far
// (nil reasons); violations without --unsafe-override, or any violation
// --unsafe-override cannot lift → an error listing ALL violations (a usage
// error, exit 2); violations with --unsafe-override → run, with the static
// invalid reason "unsafe_override" for Judge.
func (p *Preset) Enforce(s *Settings) (reasons []string, err error) {
	vs := p.check(s)
	if len(vs) == 0 {
		return nil, nil
	}
	hard := false
	for _, v := range vs {
		hard = hard || !v.Bypassable
	}
	if s.UnsafeOverride && !hard {
		return []string{ReasonUnsafeOverride}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s: %d setting(s) break its rules:", p.Name, len(vs))
	for _, v := range vs {
		b.WriteString("\n  - ")
		b.WriteString(v.String())
		if !v.Bypassable {
			b.WriteString(" (--unsafe-override cannot lift this one)")
		}
	}
	if hard {
		b.WriteString("\nfix the settings marked above")
	} else {
		b.WriteString("\nfix them, or pass --unsafe-override to run anyway (the run will not be a valid submission: submission_valid=false, reason unsafe_override)")
	}
	return nil, fmt.Errorf("%s", b.String())
}

// check fills defaults and collects violations.
func (p *Preset) check(s *Settings) []Violation {
	c := &presetCheck{p: p, s: s}
	c.requests()
	c.load()
	c.delays()
	c.defaults()
	c.corpus()
	return c.vs
}

// presetCheck collects the violations of one Preset.check and records the
// defaults it fills.
type presetCheck struct {
	p  *Preset
	s  *Settings
	vs []Violation
}

// bad records a violation --unsafe-override can lift.
func (c *presetCheck) bad(flag, format string, args ...any) {
	c.vs = append(c.vs, Violation{Flag: flag, Message: fmt.Sprintf(format, args...), Bypassable: true})
}

// fill records a default the preset filled in.
func (c *presetCheck) fill(format string, args ...any) {
	c.s.Filled = append(c.s.Filled, fmt.Sprintf(format, args...)+" (filled by scenario "+c.p.Name+")")
}

// requests checks what goes on the wire: the timing mode, streaming, ignore_eos and the cache-bust marker.
func (c *presetCheck) requests() {
	p, s := c.p, c.s
	if s.TimingMode != "" && s.TimingMode != TimingAgenticReplay {
		c.bad("timing mode", "%s requires agentic_replay, not %s", p.Name, s.TimingMode)
	} else {
		s.TimingMode = TimingAgenticReplay
	}
	for _, f := range s.SchedulingFlags {
		c.bad(f, "forbidden: %s replays traces with agentic_replay; drop %s", p.Name, f)
	}

	if s.Streaming.Set && !s.Streaming.V {
		c.bad("--streaming", "streaming is required (TTFT and ITL need a stream); remove the setting that turns it off")
	} else if !s.Streaming.Set {
		s.Streaming = Some(true)
		c.fill("streaming=true")
	}

	kept := s.ExtraInputs[:0:0]
	for _, e := range s.ExtraInputs {
		if e.Key != "ignore_eos" {
			kept = append(kept, e)
			continue
		}
		s.IgnoreEOS = Some(truthy(e.Value))
	}
	s.ExtraInputs = kept
	if s.IgnoreEOS.Set && !s.IgnoreEOS.V {
		c.bad("--extra-inputs ignore_eos", "must be true (outputs must run to the recorded length); drop ignore_eos:false")
	} else if !s.IgnoreEOS.Set {
		s.IgnoreEOS = Some(true)
		c.fill("ignore_eos=true")
	}

	if s.CacheBust.Set && s.CacheBust.V != p.CacheBust {
		c.bad("--cache-bust", "locked to %s, got %s (sessions of the same trace would share prefix-cache entries); drop the flag", p.CacheBust, s.CacheBust.V)
	} else if !s.CacheBust.Set {
		s.CacheBust = Some(p.CacheBust)
		c.fill("cache_bust=%s", p.CacheBust)
	}
}

// load checks the duration, the concurrency and the seed.
func (c *presetCheck) load() {
	p, s := c.p, c.s
	if s.BenchmarkDuration.Set {
		if s.BenchmarkDuration.V < p.MinDuration {
			c.bad("--benchmark-duration", "%v is below the scenario minimum of %v; pass at least %d", s.BenchmarkDuration.V.Seconds(), p.MinDuration.Seconds(), int(p.MinDuration.Seconds()))
		}
	} else {
		s.BenchmarkDuration = Some(p.DefaultDuration)
		c.fill("benchmark_duration=%v", p.DefaultDuration.Seconds())
	}

	switch len(s.Concurrency) {
	case 0:
		c.bad("--concurrency", "required: pass one integer, the number of lanes")
	case 1:
	default:
		c.bad("--concurrency", "must be a single integer, got %d values (%s); run one benchmark per concurrency", len(s.Concurrency), joinInts(s.Concurrency))
	}

	if !s.RandomSeed.Set {
		var seed int64
		if s.SeedSource != nil {
			seed = s.SeedSource()
		}
		s.RandomSeed = Some(seed)
		c.fill("random_seed=%d", seed)
	}
}

// delays checks the generation's delay and idle caps and the trace delays.
func (c *presetCheck) delays() {
	p, s := c.p, c.s
	if p.DelayCap > 0 {
		if s.InterTurnDelayCap.Set && s.InterTurnDelayCap.V != p.DelayCap {
			c.bad("--inter-turn-delay-cap-seconds", "locked to %v, got %v; drop the flag", p.DelayCap.Seconds(), s.InterTurnDelayCap.V.Seconds())
		} else if !s.InterTurnDelayCap.Set {
			s.InterTurnDelayCap = Some(p.DelayCap)
			c.fill("inter_turn_delay_cap_seconds=%v", p.DelayCap.Seconds())
		}
	}
	if p.ForbidDelayCap && s.InterTurnDelayCap.Set {
		c.bad("--inter-turn-delay-cap-seconds", "forbidden: %s delays are the recorded end-to-start gaps, with runtime idle caps instead (--trace-idle-gap-cap-seconds); drop the flag", p.Generation.Name)
	}
	if p.SystemIdleCap > 0 {
		if s.SystemIdleGapCap.Set && s.SystemIdleGapCap.V != p.SystemIdleCap {
			c.bad("--system-idle-gap-cap-seconds", "locked to %v, got %v; drop the flag", p.SystemIdleCap.Seconds(), s.SystemIdleGapCap.V.Seconds())
		} else if !s.SystemIdleGapCap.Set {
			s.SystemIdleGapCap = Some(p.SystemIdleCap)
			c.fill("system_idle_gap_cap_seconds=%v", p.SystemIdleCap.Seconds())
		}
	}
	if p.IdleGapCap > 0 {
		if s.TraceIdleGapCap.Set && s.TraceIdleGapCap.V != p.IdleGapCap {
			c.bad("--trace-idle-gap-cap-seconds", "locked to %v, got %v; drop the flag", p.IdleGapCap.Seconds(), s.TraceIdleGapCap.V.Seconds())
		} else if !s.TraceIdleGapCap.Set {
			s.TraceIdleGapCap = Some(p.IdleGapCap)
			c.fill("trace_idle_gap_cap_seconds=%v", p.IdleGapCap.Seconds())
		}
	}
	if s.IgnoreTraceDelays {
		c.bad("--ignore-trace-delays", "forbidden: the recorded think times are part of the workload; drop the flag")
	}
}

// defaults fills the server token count and the start ratios.
func (c *presetCheck) defaults() {
	p, s := c.p, c.s
	if !s.UseServerTokenCount.Set {
		s.UseServerTokenCount = Some(true)
		c.fill("use_server_token_count=true")
	}
	if !s.TrajectoryMinRatio.Set {
		s.TrajectoryMinRatio = Some(p.MinRatio)
		c.fill("trajectory_start_min_ratio=%v", p.MinRatio)
	}
	if !s.TrajectoryMaxRatio.Set {
		s.TrajectoryMaxRatio = Some(p.MaxRatio)
		c.fill("trajectory_start_max_ratio=%v", p.MaxRatio)
	}
	if s.SynthesisMaxISL.Set {
		c.bad("--synthesis-max-isl", "forbidden: prompts are never truncated (traces too long for the server are dropped with --max-context-length instead); drop the flag")
	}
}

// corpus checks that the corpus is one the scenario allows.
func (c *presetCheck) corpus() {
	p, s := c.p, c.s
	switch s.Loader {
	case LoaderUnset:
		c.vs = append(c.vs, Violation{Flag: "--public-dataset", Message: "a SemiAnalysis weka corpus is required (e.g. --public-dataset semianalysis_cc_traces_weka_with_subagents)"})
	case LoaderSynthetic:
		c.vs = append(c.vs, Violation{Flag: "--public-dataset", Message: fmt.Sprintf("a synthetic corpus is not an AgentX workload; use a %s* alias", p.PublicPrefix)})
	case LoaderPublic:
		switch {
		case len(p.Aliases) > 0 && !slices.Contains(p.Aliases, s.PublicDataset):
			c.bad("--public-dataset", "%q is not one of the %s corpora (%s)", s.PublicDataset, p.Generation.Name, strings.Join(p.Aliases, ", "))
		case len(p.Aliases) == 0 && !strings.HasPrefix(s.PublicDataset, p.PublicPrefix):
			c.bad("--public-dataset", "%q is not a SemiAnalysis weka corpus; use a %s* alias", s.PublicDataset, p.PublicPrefix)
		}
	case LoaderHF:
		repo, _, _ := strings.Cut(s.HFDataset, "@")
		switch {
		case len(p.HFRepos) > 0 && !slices.Contains(p.HFRepos, repo):
			c.bad("--hf-dataset", "%q: the %s scenario takes only %s; use a --public-dataset alias", s.HFDataset, p.Generation.Name, strings.Join(p.HFRepos, ", "))
		case len(p.HFRepos) == 0 && !strings.HasPrefix(s.HFDataset, p.HFPrefix):
			c.bad("--hf-dataset", "%q is not a SemiAnalysis weka corpus; use a %s* repo", s.HFDataset, p.HFPrefix)
		}
	case LoaderLocal:
		if len(p.Aliases) > 0 {
			c.bad("--input-file", "a local corpus is not a %s submission corpus (it needs --unsafe-override; the run is then not a valid submission)", p.Generation.Name)
		}
		// The legacy scenario allowed aiperf's local weka_trace loader.
	}
}

// truthy reports whether an --extra-inputs value means true.
func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(x))
		return err == nil && b
	}
	return false
}

func joinInts(xs []int) string {
	ss := make([]string, len(xs))
	for i, x := range xs {
		ss[i] = strconv.Itoa(x)
	}
	return strings.Join(ss, ",")
}
