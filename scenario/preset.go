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

// Into stores o's value in *dst when o is set, and leaves *dst as it is
// otherwise.
func (o Opt[T]) Into(dst *T) {
	if o.Set {
		*dst = o.V
	}
}

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

	// The settings of the soft defaults (Preset.Defaults) that have no
	// lock: --stats-interval, --failed-request-threshold,
	// --warmup-requests-per-lane, --warmup-grace-period (or
	// --agentic-warmup-grace-period), --no-gpu-telemetry (or
	// --gpu-telemetry), --num-dataset-entries, --slice-duration.
	StatsInterval          Opt[time.Duration]
	FailedRequestThreshold Opt[float64]
	WarmupRequestsPerLane  Opt[int]
	WarmupGracePeriod      Opt[time.Duration]
	NoGPUTelemetry         Opt[bool]
	NumDatasetEntries      Opt[int]
	SliceDuration          Opt[time.Duration]
	// AgenticCacheWarmup is --agentic-cache-warmup-duration: set, it keeps
	// the warmup-requests-per-lane default out (the two modes exclude each
	// other).
	AgenticCacheWarmup Opt[time.Duration]

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

// Preset is a scenario preset: one value holding everything the harness's
// ScenarioSpec holds. Its locks (the fields from MinDuration to HFPrefix)
// are checked against what the user gave; its soft defaults (DefaultDuration,
// MinRatio/MaxRatio, Defaults) fill only what the user left unset; its
// environment defaults (Env) apply where the variable is not set; and its
// validity rules (CoverageRatio over phases of at least MinDuration) judge
// the finished run. The presets are the rows of one table (presetTable).
type Preset struct {
	// Name is the --scenario value.
	Name string
	// Doc is a one-line description.
	Doc string
	// Generation is the AgentX generation whose rules the preset applies.
	Generation timing.Generation
	// MinDuration is the shortest --benchmark-duration allowed (a lock),
	// and the shortest profiling phase the coverage rule judges.
	MinDuration time.Duration
	// DefaultDuration fills --benchmark-duration when unset.
	DefaultDuration time.Duration
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
	// MinRatio and MaxRatio are the default trajectory start ratios (soft
	// defaults: an explicit value is kept).
	MinRatio, MaxRatio float64
	// PublicPrefix and HFPrefix are the allowed corpus aliases / repos
	// (prefix match) when Aliases / HFRepos are not set.
	PublicPrefix, HFPrefix string
	// Defaults are the soft defaults: each fills its setting only where
	// the user gave no flag for it (the harness's cli_defaults).
	Defaults Defaults
	// Env are the environment defaults, applied for the run where the
	// variable is not set (an explicit variable wins; Getenv).
	Env []EnvDefault
	// IgnoredEnv are variables the preset does not read (Value unused):
	// set, they are logged as ignored.
	IgnoredEnv []EnvDefault
	// CoverageRatio is the fraction of a profiling phase (of at least
	// MinDuration) that TTFT, ITL or streaming content must reach for the
	// run to be valid (the harness's minimum_profile_metric_coverage_ratio;
	// 0: no coverage rule).
	CoverageRatio float64
}

// Defaults are a preset's soft defaults, by the aiperf setting each
// fills; an unset Opt fills nothing. Two follow the harness's exceptions:
// NoGPUTelemetry is not filled when the user set GPU telemetry either way,
// and WarmupRequestsPerLane is not filled when the user bounded the cache
// warmup by time (--agentic-cache-warmup-duration): the two warmup modes
// exclude each other.
type Defaults struct {
	// EndpointType is endpoint_type ("chat", the only type agentperf
	// speaks); it is recorded, there is nothing to fill.
	EndpointType string
	// Streaming is streaming (beside the streaming lock).
	Streaming Opt[bool]
	// StatsInterval is stats_interval.
	StatsInterval Opt[time.Duration]
	// RandomSeed is random_seed. Without it the seed is auto-filled from
	// Settings.SeedSource, as the harness does.
	RandomSeed Opt[int64]
	// FailedRequestThreshold is failed_request_threshold.
	FailedRequestThreshold Opt[float64]
	// WarmupRequestsPerLane is warmup_requests_per_lane.
	WarmupRequestsPerLane Opt[int]
	// WarmupGracePeriod is warmup_grace_period (the whole warmup's bound).
	WarmupGracePeriod Opt[time.Duration]
	// TraceIdleGapCap is trace_idle_gap_cap_seconds (v1.0: the per-tree
	// runtime idle cap).
	TraceIdleGapCap Opt[time.Duration]
	// UseServerTokenCount is use_server_token_count.
	UseServerTokenCount Opt[bool]
	// NoGPUTelemetry is no_gpu_telemetry.
	NoGPUTelemetry Opt[bool]
	// NumDatasetEntries is num_dataset_entries.
	NumDatasetEntries Opt[int]
	// SliceDuration is slice_duration.
	SliceDuration Opt[time.Duration]
}

// EnvDefault is one environment default of a preset.
type EnvDefault struct {
	// Name is the variable (AIPERF_…), Value its default.
	Name, Value string
	// Why says what agentperf does with it.
	Why string
}

// Getenv returns getenv with the preset's environment defaults beneath
// it: a variable getenv returns as unset or empty takes its default.
func (p *Preset) Getenv(getenv func(string) string) func(string) string {
	if len(p.Env) == 0 {
		return getenv
	}
	return func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		for _, e := range p.Env {
			if e.Name == k {
				return e.Value
			}
		}
		return ""
	}
}

// Environ returns environ (NAME=value entries) with the preset's
// environment defaults added where the variable is unset or empty, and
// the lines saying which defaults were applied, for the run log.
func (p *Preset) Environ(environ []string) (out []string, applied []string) {
	set := map[string]bool{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if v != "" {
			set[k] = true
		}
	}
	out = slices.Clone(environ)
	for _, e := range p.Env {
		if set[e.Name] {
			continue
		}
		out = append(out, e.Name+"="+e.Value)
		applied = append(applied, fmt.Sprintf("%s=%s (environment default of scenario %s)", e.Name, e.Value, p.Name))
	}
	return out, applied
}

// The scenario names.
const (
	// NameAgentXMVP is InferenceX's scenario until v1.0.5.
	NameAgentXMVP = "inferencex-agentx-mvp"
	// NameAgentX is the harness's bundled scenario, which InferenceX's
	// current client passes.
	NameAgentX = "agentx"
)

// AgentXGeneration is the generation `agentx` replays. The harness's
// agentx-v1.0.6 has no timing rule the pin 754356e9 (v1.0) lacked: the
// five rules docs/replay.md lists under "v1.0 replay rules and their
// sources" all came in before it, so v1.0 (corrected where it differed)
// is agentx's generation, not a new one.
const AgentXGeneration = "v1.0"

// RequiredCoverage is the coverage both presets require (the harness's
// minimum_profile_metric_coverage_ratio; 0.98 in agentx-v1.0.1 to v1.0.4).
const RequiredCoverage = 0.95

// presetRow is one preset of the table: its name, the generation it is
// pinned to ("" for any, chosen with NAME@GEN or --agentx-generation,
// default timing.DefaultGeneration), and the preset at a generation.
type presetRow struct {
	name       string
	generation string
	at         func(timing.Generation) *Preset
}

// presetTable is every preset. A new preset is a new row.
var presetTable = []presetRow{
	{NameAgentXMVP, "", AgentXMVPOf},
	{NameAgentX, AgentXGeneration, agentXOf},
}

// Names returns the preset names, in table order.
func Names() []string {
	var out []string
	for _, r := range presetTable {
		out = append(out, r.name)
	}
	return out
}

// Presets returns every preset at its default (or pinned) generation, in
// table order: what `profile --help` and the docs list.
func Presets() []*Preset {
	var out []*Preset
	for _, r := range presetTable {
		p, err := LookupAt(r.name, "")
		if err != nil {
			panic(err) // the table names known generations
		}
		out = append(out, p)
	}
	return out
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
//   - trajectory start ratios default to 0.25 / 0.75 (v1.0: 0 / 1); not
//     a lock;
//   - the corpus must be a SemiAnalysis weka corpus: a
//     `semianalysis_cc_traces_weka*` alias, a `semianalysisai/cc-traces-weka*`
//     HF repo, or local weka trace files; a synthetic or missing corpus is
//     a violation that --unsafe-override cannot lift (as aiperf);
//   - profiling metric coverage of at least CoverageRatio.
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
		// agentperf's own soft default (not the harness's): the server's
		// counts are the truth.
		Defaults:      Defaults{UseServerTokenCount: Some(true)},
		CoverageRatio: RequiredCoverage,
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
		p.HFRepos = []string{AgentXHFRepo}
		p.Doc = "InferenceX AgentX MVP, " + g.Name + ": session trees, streaming, ignore_eos, first_turn_prefix cache bust, end-to-start delays, 10 s system idle cap, ≥ 900 s"
	}
	return p
}

// AgentXHFRepo is the one Hugging Face repo the v1.0 presets take through
// --hf-dataset / --hf-weka-dataset (the harness's weka_hf loader).
const AgentXHFRepo = "semianalysisai/cc-traces-weka-062126"

// agentXOf returns the `agentx` preset at generation g: the locks of
// `inferencex-agentx-mvp` at g, 3600 s and start ratios 0.25/0.75 as
// defaults, and the harness's soft and environment defaults.
func agentXOf(g timing.Generation) *Preset {
	p := AgentXMVPOf(g)
	p.Name = NameAgentX
	p.DefaultDuration = 3600 * time.Second
	p.MinRatio, p.MaxRatio = 0.25, 0.75
	p.Defaults = Defaults{
		EndpointType:           "chat",
		Streaming:              Some(true),
		StatsInterval:          Some(30 * time.Second),
		RandomSeed:             Some(int64(42)),
		FailedRequestThreshold: Some(0.10),
		WarmupRequestsPerLane:  Some(10),
		WarmupGracePeriod:      Some(1800 * time.Second),
		TraceIdleGapCap:        Some(300 * time.Second),
		UseServerTokenCount:    Some(true),
		NoGPUTelemetry:         Some(true),
		NumDatasetEntries:      Some(393),
		SliceDuration:          Some(time.Second),
	}
	p.Env = []EnvDefault{
		{Name: "AIPERF_DATASET_CONFIGURATION_TIMEOUT", Value: "1800", Why: "bounds opening the corpus"},
		{Name: "AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT", Value: "1800", Why: "bounds opening the corpus"},
		{Name: "AIPERF_UI_REALTIME_METRICS_ENABLED", Value: "true", Why: "the live view is always on"},
		{Name: "AIPERF_HTTP_TCP_USER_TIMEOUT", Value: "900000", Why: "TCP_USER_TIMEOUT of the client's sockets, in ms"},
	}
	p.IgnoredEnv = []EnvDefault{{Name: "AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES",
		Why: "the harness no longer reads it: the recorded assistant content is replayed, never the server's replies"}}
	p.Doc = "AgentX as InferenceX runs it today (agentx-harness): the locks of " + NameAgentXMVP + " at " + g.Name + ", 3600 s, start ratios 0.25/0.75, and the harness's soft and environment defaults"
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

// Lookup returns the preset called name, which may carry a generation
// after "@" ("inferencex-agentx-mvp@v0.2"); without one the preset is at
// its default generation. An unknown name is an error that lists the
// presets, an unknown generation one that lists the generations.
func Lookup(name string) (*Preset, error) { return LookupAt(name, "") }

// LookupAt is Lookup with the generation to use when name carries none. A
// name that carries a generation different from gen (both given) is an
// error, and so is a generation other than its own for a preset pinned to
// one (agentx).
func LookupAt(name, gen string) (*Preset, error) {
	base, suffix := SplitScenario(name)
	i := slices.IndexFunc(presetTable, func(r presetRow) bool { return r.name == base })
	if i < 0 {
		names := Names()
		return nil, fmt.Errorf("--scenario %q: unknown scenario%s; known scenarios: %s (%s optionally @%s)", name, suggest.DidYouMean(base, names), strings.Join(names, ", "), NameAgentXMVP, strings.Join(timing.GenerationNames(), "|"))
	}
	row := presetTable[i]
	if suffix != "" && gen != "" && suffix != gen {
		return nil, fmt.Errorf("--scenario %q selects AgentX %s but the generation was also set to %s: set it once", name, suffix, gen)
	}
	if suffix == "" {
		suffix = gen
	}
	if row.generation != "" {
		if suffix != "" && suffix != row.generation {
			return nil, fmt.Errorf("--scenario %q: %s replays AgentX %s only, not %s; drop the generation (--agentx-generation, $AGENTPERF_AGENTX_GENERATION or @GEN), or use --scenario %s@%s", name, row.name, row.generation, suffix, NameAgentXMVP, suffix)
		}
		suffix = row.generation
	}
	g, err := timing.LookupGeneration(suffix)
	if err != nil {
		return nil, fmt.Errorf("--scenario %q: %w", name, err)
	}
	return row.at(g), nil
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
		seed, how := p.Defaults.RandomSeed.V, ""
		if !p.Defaults.RandomSeed.Set {
			seed, how = 0, ", auto-filled"
			if s.SeedSource != nil {
				seed = s.SeedSource()
			}
		}
		s.RandomSeed = Some(seed)
		c.fill("random_seed=%d%s", seed, how)
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

// defaults fills the soft defaults and the start ratios where unset.
func (c *presetCheck) defaults() {
	p, s := c.p, c.s
	d := &p.Defaults
	fillOpt(c, "use_server_token_count", &s.UseServerTokenCount, d.UseServerTokenCount)
	fillOpt(c, "trace_idle_gap_cap_seconds", &s.TraceIdleGapCap, d.TraceIdleGapCap)
	fillOpt(c, "stats_interval", &s.StatsInterval, d.StatsInterval)
	fillOpt(c, "failed_request_threshold", &s.FailedRequestThreshold, d.FailedRequestThreshold)
	if !s.AgenticCacheWarmup.Set || s.AgenticCacheWarmup.V == 0 {
		fillOpt(c, "warmup_requests_per_lane", &s.WarmupRequestsPerLane, d.WarmupRequestsPerLane)
	}
	fillOpt(c, "warmup_grace_period", &s.WarmupGracePeriod, d.WarmupGracePeriod)
	fillOpt(c, "no_gpu_telemetry", &s.NoGPUTelemetry, d.NoGPUTelemetry)
	fillOpt(c, "num_dataset_entries", &s.NumDatasetEntries, d.NumDatasetEntries)
	fillOpt(c, "slice_duration", &s.SliceDuration, d.SliceDuration)
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

// fillOpt fills dst with def when the user left dst unset and the preset
// has a default, and logs it.
func fillOpt[T any](c *presetCheck, name string, dst *Opt[T], def Opt[T]) {
	if dst.Set || !def.Set {
		return
	}
	*dst = def
	switch v := any(def.V).(type) {
	case time.Duration:
		c.fill("%s=%v", name, v.Seconds())
	default:
		c.fill("%s=%v", name, v)
	}
}

// corpus checks that the corpus is one the scenario allows.
func (c *presetCheck) corpus() {
	p, s := c.p, c.s
	switch s.Loader {
	case LoaderUnset:
		c.vs = append(c.vs, Violation{Flag: "--public-dataset", Message: "a SemiAnalysis weka corpus is required: " + p.corpusAdvice()})
	case LoaderSynthetic:
		c.vs = append(c.vs, Violation{Flag: "--public-dataset", Message: fmt.Sprintf("%q is a synthetic corpus, not an AgentX workload: %s", s.PublicDataset, p.corpusAdvice())})
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
			c.bad("--hf-weka-dataset", "%q: scenario %s takes only %s (the weka_hf loader); use a --public-dataset alias", s.HFDataset, p.Name, strings.Join(p.HFRepos, ", "))
		case len(p.HFRepos) == 0 && !strings.HasPrefix(s.HFDataset, p.HFPrefix):
			c.bad("--hf-dataset", "%q is not a SemiAnalysis weka corpus; use a %s* repo", s.HFDataset, p.HFPrefix)
		}
	case LoaderLocal:
		if len(p.Aliases) > 0 {
			c.bad("--input-file", "scenario %s cannot verify the identity of a local corpus: %s for a valid submission, or pass --unsafe-override for an offline smoke test (submission_valid=false)", p.Name, p.corpusAdvice())
		}
		// The legacy scenario allowed aiperf's local weka_trace loader.
	}
}

// corpusAdvice says which corpus flags the preset takes.
func (p *Preset) corpusAdvice() string {
	if len(p.Aliases) > 0 {
		return fmt.Sprintf("pass --public-dataset semianalysis_cc_traces_weka_062126 (or _062126_256k, or another of %s), or --hf-weka-dataset %s", strings.Join(p.Aliases, ", "), strings.Join(p.HFRepos, ", "))
	}
	return fmt.Sprintf("pass a %s* alias to --public-dataset (e.g. semianalysis_cc_traces_weka_with_subagents), a %s* repo to --hf-dataset, or local weka traces to --input-file", p.PublicPrefix, p.HFPrefix)
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

// Describe returns the preset in words, one line per kind of rule: its
// locks, its soft defaults, its environment defaults and its validity
// rules (what `agentperf profile --help` and docs/replay.md show).
func (p *Preset) Describe() []string {
	locks := []string{"agentic_replay", "streaming", "ignore_eos", "cache_bust=" + string(p.CacheBust),
		fmt.Sprintf("benchmark_duration ≥ %gs", p.MinDuration.Seconds()), "one concurrency", "no --ignore-trace-delays", "no --synthesis-max-isl"}
	if p.DelayCap > 0 {
		locks = append(locks, fmt.Sprintf("inter_turn_delay_cap=%gs", p.DelayCap.Seconds()))
	}
	if p.ForbidDelayCap {
		locks = append(locks, "no --inter-turn-delay-cap-seconds")
	}
	if p.IdleGapCap > 0 {
		locks = append(locks, fmt.Sprintf("trace_idle_gap_cap=%gs", p.IdleGapCap.Seconds()))
	}
	if p.SystemIdleCap > 0 {
		locks = append(locks, fmt.Sprintf("system_idle_gap_cap=%gs", p.SystemIdleCap.Seconds()))
	}
	if len(p.Aliases) > 0 {
		locks = append(locks, fmt.Sprintf("corpus: %d aliases (062126 family and the rolling with_subagents ones) or --hf-weka-dataset %s; a local corpus needs --unsafe-override; a synthetic one is refused", len(p.Aliases), strings.Join(p.HFRepos, ",")))
	} else {
		locks = append(locks, "corpus: "+p.PublicPrefix+"* or "+p.HFPrefix+"* or local weka traces; a synthetic one is refused")
	}
	defs := []string{fmt.Sprintf("benchmark_duration=%g", p.DefaultDuration.Seconds()),
		fmt.Sprintf("trajectory_start_min_ratio=%g", p.MinRatio), fmt.Sprintf("trajectory_start_max_ratio=%g", p.MaxRatio)}
	d := &p.Defaults
	if d.EndpointType != "" {
		defs = append(defs, "endpoint_type="+d.EndpointType)
	}
	add := func(name string, set bool, v any) {
		if set {
			if dur, ok := v.(time.Duration); ok {
				v = dur.Seconds()
			}
			defs = append(defs, fmt.Sprintf("%s=%v", name, v))
		}
	}
	add("streaming", d.Streaming.Set, d.Streaming.V)
	add("stats_interval", d.StatsInterval.Set, d.StatsInterval.V)
	if d.RandomSeed.Set {
		add("random_seed", true, d.RandomSeed.V)
	} else {
		defs = append(defs, "random_seed=auto-filled and logged")
	}
	add("failed_request_threshold", d.FailedRequestThreshold.Set, d.FailedRequestThreshold.V)
	add("warmup_requests_per_lane", d.WarmupRequestsPerLane.Set, fmt.Sprint(d.WarmupRequestsPerLane.V)+" (not with --agentic-cache-warmup-duration)")
	add("warmup_grace_period", d.WarmupGracePeriod.Set, d.WarmupGracePeriod.V)
	add("trace_idle_gap_cap_seconds", d.TraceIdleGapCap.Set, d.TraceIdleGapCap.V)
	add("use_server_token_count", d.UseServerTokenCount.Set, d.UseServerTokenCount.V)
	add("no_gpu_telemetry", d.NoGPUTelemetry.Set, fmt.Sprint(d.NoGPUTelemetry.V)+" (not with a GPU telemetry flag)")
	add("num_dataset_entries", d.NumDatasetEntries.Set, d.NumDatasetEntries.V)
	add("slice_duration", d.SliceDuration.Set, d.SliceDuration.V)
	out := []string{p.Name + " (AgentX " + p.Generation.Name + "): " + p.Doc,
		"  locks: " + strings.Join(locks, ", "),
		"  defaults where no flag is given: " + strings.Join(defs, ", ")}
	if len(p.Env) > 0 {
		var env []string
		for _, e := range p.Env {
			env = append(env, e.Name+"="+e.Value)
		}
		out = append(out, "  environment defaults (an explicit variable wins): "+strings.Join(env, ", "))
	}
	for _, e := range p.IgnoredEnv {
		out = append(out, "  ignored: "+e.Name+" ("+e.Why+")")
	}
	if p.CoverageRatio > 0 {
		out = append(out, fmt.Sprintf("  valid only if TTFT, ITL or streamed content reach %g%% of a profiling phase ≥ %gs", 100*p.CoverageRatio, p.MinDuration.Seconds()))
	}
	return out
}
