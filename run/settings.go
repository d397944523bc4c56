package run

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
	"github.com/agentperf/agentperf/ui"
)

// Unit is the unit of a setting's value as the user writes it.
type Unit string

// The units of the settings.
const (
	UnitNone     Unit = ""
	UnitSeconds  Unit = "seconds" // a time.Duration field, written in seconds
	UnitRequests Unit = "requests"
	UnitFraction Unit = "fraction" // the range says of what; not written in a range's text
	// UnitWholeSeconds: an int field of seconds (written "seconds").
	UnitWholeSeconds Unit = "whole seconds"
)

// Lock says what a scenario preset does with a setting.
type Lock int

// The lock rules.
const (
	// Free: no preset touches the setting.
	Free Lock = iota
	// Filled: a preset's soft default fills it when it was not given
	// (scenario.Preset.Defaults); a given value stands.
	Filled
	// Locked: a preset locks it: a given value that breaks the lock is a
	// violation (exit 2, or unsafe_override); unset, the preset fills it.
	Locked
	// Excludes: a preset leaves it as it is, but given, it keeps a soft
	// default of another setting out (the two exclude each other).
	Excludes
)

// Range is the range of a numeric setting; a value given outside it is a
// usage error that names it.
type Range struct {
	Min, Max float64
	// MinOpen: Min itself is out of range.
	MinOpen bool
	// What says what the value means, for the error ("0 = no cap").
	What string
}

// Contains says whether v is in the range (NaN never is).
func (r *Range) Contains(v float64) bool {
	return !math.IsNaN(v) && (v > r.Min || (v == r.Min && !r.MinOpen)) && v <= r.Max
}

// Text is the range in words, in unit u: "seconds > 0", "0 to 1",
// "tokens ≥ 0".
func (r *Range) Text(u Unit) string {
	unit := string(u) + " "
	switch u {
	case UnitNone, UnitFraction:
		unit = ""
	case UnitWholeSeconds:
		unit = string(UnitSeconds) + " "
	}
	lo := "≥"
	if r.MinOpen {
		lo = ">"
	}
	if math.IsInf(r.Max, 1) {
		return fmt.Sprintf("%s%s %g", unit, lo, r.Min)
	}
	return fmt.Sprintf("%s%g to %g", unit, r.Min, r.Max)
}

// Setting is one row of the table of a run's settings (Settings): the
// flag that sets it (aiperf's name), the Spec field it fills, its
// default, unit, help text, range and lock rule. A CLI walks the table to
// register its flags and fill the Spec (Bind); it writes no per-field
// code.
type Setting struct {
	// Flag is the flag's name, without the dashes.
	Flag string
	// Short is its one-letter shorthand ("" = none).
	Short string
	// Aliases are other names of the same flag (aiperf's older names).
	Aliases []string
	// Field is the field as the library's errors name it
	// ("Config.GracePeriod", "Spec.FailedRequestThreshold"), so that a
	// CLI can print them with the flag's name.
	Field string
	// Unit is the value's unit (UnitSeconds: a time.Duration written in
	// seconds).
	Unit Unit
	// Range, when set, bounds a numeric value.
	Range *Range
	// Lock is what a scenario preset does with it.
	Lock Lock
	// Help is the flag's help text.
	Help string
	// Key is the setting's key in input_config ("" = not recorded there);
	// its value is the field's, a UnitSeconds one in seconds.
	Key string

	def  any               // the default, of the field's type
	bind func(s *Spec) any // a pointer to the field
	// opt is the setting's scenario.Settings option (zero: no preset
	// asks whether it was given or fills it).
	opt scenarioOpt
}

// scenarioOpt is a row's option in scenario.Settings: its Set bit and a
// pointer to its value, of the row's field's type.
type scenarioOpt struct {
	set func(*scenario.Settings) *bool
	v   func(*scenario.Settings) any
}

// opt is the scenarioOpt of the option f returns.
func opt[T any](f func(*scenario.Settings) *scenario.Opt[T]) scenarioOpt {
	return scenarioOpt{set: func(set *scenario.Settings) *bool { return &f(set).Set },
		v: func(set *scenario.Settings) any { return &f(set).V }}
}

// Default is the setting's default value, of the field's type.
func (st Setting) Default() any { return st.def }

// Bind stores the setting's default in s and returns a pointer to its
// field: *string, *[]string, *bool, *int, *int64, *float64 or
// *time.Duration (a UnitSeconds setting). A flag bound to it fills the Spec as it is parsed.
func (st Setting) Bind(s *Spec) any {
	p := st.bind(s)
	switch p := p.(type) {
	case *string:
		*p = st.def.(string)
	case *[]string:
		*p = slices.Clone(st.def.([]string))
	case *bool:
		*p = st.def.(bool)
	case *int:
		*p = st.def.(int)
	case *int64:
		*p = st.def.(int64)
	case *float64:
		*p = st.def.(float64)
	case *time.Duration:
		*p = st.def.(time.Duration)
	}
	return p
}

// Recorded is the setting's value in s as input_config records it: the
// field's value, a UnitSeconds one in seconds.
func (st Setting) Recorded(s *Spec) any {
	if d, ok := st.bind(s).(*time.Duration); ok {
		return d.Seconds()
	}
	return reflect.ValueOf(st.bind(s)).Elem().Interface()
}

// field builds a Setting's default and binding from the field's type.
func field[T string | []string | bool | int | int64 | float64 | time.Duration](def T, f func(*Spec) *T) (any, func(*Spec) any) {
	return def, func(s *Spec) any { return f(s) }
}

// row is a Setting with its default and field.
func row[T string | []string | bool | int | int64 | float64 | time.Duration](st Setting, def T, f func(*Spec) *T) Setting {
	st.def, st.bind = field(def, f)
	return st
}

// asks records the setting's option in scenario.Settings: a preset asks
// whether it was given, and may fill or lock it.
func (st Setting) asks(o scenarioOpt) Setting {
	st.opt = o
	return st
}

// toScenario copies the settings of the table that have an option from s
// into set, every option Set (ScenarioSettings).
func toScenario(s *Spec, set *scenario.Settings) {
	for _, st := range Settings() {
		if st.opt.set != nil {
			reflect.ValueOf(st.opt.v(set)).Elem().Set(reflect.ValueOf(st.bind(s)).Elem())
			*st.opt.set(set) = true
		}
	}
}

// fromScenario copies every Set option of set that is a setting of the
// table into s (ApplyScenario).
func fromScenario(set *scenario.Settings, s *Spec) {
	for _, st := range Settings() {
		if st.opt.set != nil && *st.opt.set(set) {
			reflect.ValueOf(st.bind(s)).Elem().Set(reflect.ValueOf(st.opt.v(set)).Elem())
		}
	}
}

// otherGiven are the options a preset asks about whose flags are not rows
// of the table, with those flags.
var otherGiven = []struct {
	flags []string
	opt   func(*scenario.Settings) *bool
}{
	{[]string{"cache-bust"}, func(set *scenario.Settings) *bool { return &set.CacheBust.Set }},
	{[]string{"synthesis-max-isl"}, func(set *scenario.Settings) *bool { return &set.SynthesisMaxISL.Set }},
	{[]string{"warmup-grace-period", "agentic-warmup-grace-period"}, func(set *scenario.Settings) *bool { return &set.WarmupGracePeriod.Set }},
	{[]string{"gpu-telemetry"}, func(set *scenario.Settings) *bool { return &set.NoGPUTelemetry.Set }},
	{[]string{"num-dataset-entries"}, func(set *scenario.Settings) *bool { return &set.NumDatasetEntries.Set }},
}

// GivenSettings is the scenario.Settings of s (ScenarioSettings) with an
// option Set only where one of its flags was given (given(flag)): what a
// preset's soft defaults may fill and its locks must check. The flags of
// an option are its rows of the table (their lock rule is not Free) and
// otherGiven.
func (s *Spec) GivenSettings(given func(flag string) bool) scenario.Settings {
	set := s.ScenarioSettings()
	flags := map[*bool][]string{}
	for _, st := range Settings() {
		if st.opt.set != nil {
			p := st.opt.set(&set)
			flags[p] = append(flags[p], st.Flag)
		}
	}
	for _, o := range otherGiven {
		p := o.opt(&set)
		flags[p] = append(flags[p], o.flags...)
	}
	for p, fs := range flags {
		*p = slices.ContainsFunc(fs, given)
	}
	return set
}

// nonNegative is [0, ∞) in unit u; positive is (0, ∞).
func nonNegative(what string) *Range { return &Range{Max: math.Inf(1), What: what} }
func positive(what string) *Range    { return &Range{MinOpen: true, Max: math.Inf(1), What: what} }

// fractionOfTurns is [0, 1] of a trace's turns.
var fractionOfTurns = &Range{Max: 1, What: "a fraction of the trace's turns"}

// Settings is the table of the settings a CLI maps one to one onto the
// Spec, in the order of `profile --help`'s groups. The settings whose
// text the library parses into something else (headers, extra inputs,
// the cache-bust target, the scrape URLs) are in TextSettings; the
// concurrency and the GPU exporters are in neither.
func Settings() []Setting {
	return []Setting{
		row(Setting{Flag: "unsafe-override", Key: "unsafe_override", Field: "Spec.UnsafeOverride",
			Help: "run despite scenario violations; the run is marked submission_valid=false"},
			false, func(s *Spec) *bool { return &s.UnsafeOverride }),
		row(Setting{Flag: "fail-on-invalid", Field: "Spec.FailOnInvalid",
			Help: "exit 1 when the run is not a valid submission, whatever the reason (under --scenario the default follows aiperf: unsafe_override and the overflow rate alone exit 0)"},
			false, func(s *Spec) *bool { return &s.FailOnInvalid }),

		// Endpoint.
		row(Setting{Flag: "url", Field: "Config.URL",
			Help: "server base URL, e.g. http://localhost:8000, or sim:// (in-process simulator, e.g. sim://?max-model-len=131072)"},
			"", func(s *Spec) *string { return &s.Replay.URL }),
		row(Setting{Flag: "model", Short: "m", Aliases: []string{"model-names"}, Field: "Config.Models", Key: "model_names",
			Help: "model name(s) sent on the wire; several (comma-separated or repeated) map a trace's recorded models in order (omitted: the one model the server lists at /v1/models)"},
			[]string(nil), func(s *Spec) *[]string { return &s.Replay.Models }),
		row(Setting{Flag: "endpoint", Key: "endpoint", Field: "Config.Endpoint", Help: "endpoint path appended to --url"},
			replay.DefaultEndpoint, func(s *Spec) *string { return &s.Replay.Endpoint }),
		row(Setting{Flag: "streaming", Key: "streaming", Field: "Config.Streaming", Lock: Locked,
			Help: "stream responses (SSE); required for TTFT and ITL"},
			false, func(s *Spec) *bool { return &s.Replay.Streaming }).asks(opt(func(set *scenario.Settings) *scenario.Opt[bool] { return &set.Streaming })),
		row(Setting{Flag: "insecure", Field: "Config.Insecure",
			Help: "skip TLS certificate verification (verification is on by default)"},
			false, func(s *Spec) *bool { return &s.Replay.Insecure }),
		row(Setting{Flag: "request-timeout-seconds", Field: "Config.RequestTimeout", Unit: UnitSeconds, Range: nonNegative("0 = no timeout"),
			Help: "timeout of one request including its whole stream (0 = none)"},
			replay.DefaultRequestTimeout, func(s *Spec) *time.Duration { return &s.Replay.RequestTimeout }),
		row(Setting{Flag: "connect-timeout-seconds", Field: "Config.ConnectTimeout", Unit: UnitSeconds, Range: nonNegative("0 = no timeout"),
			Help: "timeout for connecting to the server (0 = none)"},
			replay.DefaultConnectTimeout, func(s *Spec) *time.Duration { return &s.Replay.ConnectTimeout }),
		row(Setting{Flag: "wait-for-model-timeout", Field: "Spec.WaitForModel.Timeout", Unit: UnitSeconds,
			Help: "seconds to wait for the server to be ready before the first request, probing it and logging each try (0 = no wait: a server that is not up fails the first requests)"},
			time.Duration(0), func(s *Spec) *time.Duration { return &s.WaitForModel.Timeout }),
		row(Setting{Flag: "wait-for-model-mode", Field: "Spec.WaitForModel.Mode",
			Help: "how readiness is probed: models (GET /v1/models lists the model), inference (a one-token chat request answers 200) or both"},
			ReadyInference, func(s *Spec) *string { return &s.WaitForModel.Mode }),
		row(Setting{Flag: "wait-for-model-interval", Field: "Spec.WaitForModel.Interval", Unit: UnitSeconds,
			Help: "seconds between two readiness probes"},
			DefaultReadyInterval, func(s *Spec) *time.Duration { return &s.WaitForModel.Interval }),
		row(Setting{Flag: "use-legacy-max-tokens", Key: "use_legacy_max_tokens", Field: "Config.UseLegacyMaxTokens",
			Help: "send max_tokens instead of max_completion_tokens"},
			false, func(s *Spec) *bool { return &s.Replay.UseLegacyMaxTokens }),
		row(Setting{Flag: "ignore-eos", Key: "ignore_eos", Field: "Config.IgnoreEOS", Lock: Locked,
			Help: "send ignore_eos=true (the scenario forces it)"},
			false, func(s *Spec) *bool { return &s.Replay.IgnoreEOS }).asks(opt(func(set *scenario.Settings) *scenario.Opt[bool] { return &set.IgnoreEOS })),
		row(Setting{Flag: "use-server-token-count", Key: "use_server_token_count", Field: "Config.UseServerTokenCount", Lock: Locked,
			Help: "take ISL/OSL from the server's usage (a successful response without usage has no ISL/OSL, and the run warns with the count)"},
			false, func(s *Spec) *bool { return &s.Replay.UseServerTokenCount }).asks(opt(func(set *scenario.Settings) *scenario.Opt[bool] { return &set.UseServerTokenCount })),
		row(Setting{Flag: "apply-chat-template", Key: "apply_chat_template", Field: "Tokenizer.ApplyChatTemplate",
			Help: "read the model's chat template (tokenizer_config.json beside the tokenizer) and log what it adds to each prompt; requests still carry chat messages and ISL is the server's count (as in aiperf)"},
			false, func(s *Spec) *bool { return &s.Tokenizer.ApplyChatTemplate }),
		row(Setting{Flag: "tokenizer", Key: "tokenizer", Field: "Tokenizer.Name",
			Help: "tokenizer for prompt synthesis: an HF model id (downloaded into the hub cache when missing), a tokenizer.json/.tiktoken file or folder, or 'builtin' (approximate) (default: the --model name; builtin for --url sim:// with a model name that is not an HF id)"},
			"", func(s *Spec) *string { return &s.Tokenizer.Name }),
		row(Setting{Flag: "tokenizer-revision", Field: "ResolveOptions.Revision",
			Help: "branch, tag or commit of an HF model id tokenizer (default: main)"},
			"", func(s *Spec) *string { return &s.Tokenizer.Options.Revision }),

		row(Setting{Flag: "use-dynamo-conv-aware-routing", Field: "Config.DynamoSession.Enabled",
			Help: "send Dynamo's nvext.session_control (session id, timeout, bind) with every request"},
			false, func(s *Spec) *bool { return &s.Replay.DynamoSession.Enabled }),
		row(Setting{Flag: "dynamo-session-timeout-seconds", Field: "Config.DynamoSession.TimeoutSeconds", Unit: UnitWholeSeconds, Range: positive("the session timeout"),
			Help: "session timeout sent in nvext.session_control"},
			replay.DefaultDynamoSessionTimeoutSeconds, func(s *Spec) *int { return &s.Replay.DynamoSession.TimeoutSeconds }),

		// Load.
		row(Setting{Flag: "benchmark-duration", Key: "benchmark_duration", Field: "Config.BenchmarkDuration", Unit: UnitSeconds, Range: positive("the profiling window's length"), Lock: Locked,
			Help: "profiling duration in seconds (scenario default 1800, minimum 900)"},
			time.Duration(0), func(s *Spec) *time.Duration { return &s.Replay.BenchmarkDuration }).asks(opt(func(set *scenario.Settings) *scenario.Opt[time.Duration] { return &set.BenchmarkDuration })),
		row(Setting{Flag: "benchmark-grace-period", Key: "benchmark_grace_period", Field: "Config.GracePeriod", Unit: UnitSeconds, Range: nonNegative("0 cancels the requests in flight at the end at once"),
			Help: "seconds in-flight requests may finish after the duration before they are cancelled (0 = cancel them at once)"},
			replay.DefaultGracePeriod, func(s *Spec) *time.Duration { return &s.Replay.GracePeriod }),
		row(Setting{Flag: "random-seed", Key: "random_seed", Field: "Config.Seed", Lock: Filled,
			Help: "seed for start turns and prompt text (scenario: filled in and logged when absent)"},
			int64(0), func(s *Spec) *int64 { return &s.Replay.Seed }).asks(opt(func(set *scenario.Settings) *scenario.Opt[int64] { return &set.RandomSeed })),
		row(Setting{Flag: "failed-request-threshold", Key: "failed_request_threshold", Field: "Spec.FailedRequestThreshold", Unit: UnitFraction, Lock: Filled,
			Help: "abort when the failure rate of profiling requests is above this fraction with 99.9% confidence, judged in send order (0 = off; see docs/failed-request-threshold.md)"},
			0.0, func(s *Spec) *float64 { return &s.FailedRequestThreshold }).asks(opt(func(set *scenario.Settings) *scenario.Opt[float64] { return &set.FailedRequestThreshold })),
		row(Setting{Flag: "trajectory-start-min-ratio", Key: "trajectory_start_min_ratio", Field: "Config.StartMinRatio", Unit: UnitFraction, Range: fractionOfTurns, Lock: Locked,
			Help: "lower bound of each lane's start turn as a fraction of the trace's turns"},
			timing.DefaultStartMinRatio, func(s *Spec) *float64 { return &s.Replay.StartMinRatio }).asks(opt(func(set *scenario.Settings) *scenario.Opt[float64] { return &set.TrajectoryMinRatio })),
		row(Setting{Flag: "trajectory-start-max-ratio", Key: "trajectory_start_max_ratio", Field: "Config.StartMaxRatio", Unit: UnitFraction, Range: fractionOfTurns, Lock: Locked,
			Help: "upper bound of each lane's start turn as a fraction of the trace's turns"},
			timing.DefaultStartMaxRatio, func(s *Spec) *float64 { return &s.Replay.StartMaxRatio }).asks(opt(func(set *scenario.Settings) *scenario.Opt[float64] { return &set.TrajectoryMaxRatio })),
		row(Setting{Flag: "inter-turn-delay-cap-seconds", Key: "inter_turn_delay_cap", Field: "Config.InterTurnDelayCap", Unit: UnitSeconds, Range: nonNegative("0 = no cap"), Lock: Locked,
			Help: "v0.2: cap on each recorded inter-turn delay, 0 = no cap (scenario: locked at 60)"},
			timing.DefaultInterTurnDelayCap, func(s *Spec) *time.Duration { return &s.Replay.InterTurnDelayCap }).asks(opt(func(set *scenario.Settings) *scenario.Opt[time.Duration] { return &set.InterTurnDelayCap })),
		row(Setting{Flag: "trace-idle-gap-cap-seconds", Key: "trace_idle_gap_cap_seconds", Field: "Config.TraceIdleGapCap", Unit: UnitSeconds, Range: nonNegative("the longest start-to-start gap kept"), Lock: Locked,
			Help: "v0.3: start-to-start gaps of a trace's merged timeline longer than this are shortened to it (default and scenario lock 60); v1.0: a tree idle this long has its pending timers pulled in (default off); 0 = off"},
			time.Duration(0), func(s *Spec) *time.Duration { return &s.Replay.TraceIdleGapCap }).asks(opt(func(set *scenario.Settings) *scenario.Opt[time.Duration] { return &set.TraceIdleGapCap })),
		row(Setting{Flag: "system-idle-gap-cap-seconds", Key: "system_idle_gap_cap_seconds", Field: "Config.SystemIdleGapCap", Unit: UnitSeconds, Range: nonNegative("the longest idle stretch kept"), Lock: Locked,
			Help: "v1.0: with nothing in flight anywhere, the next request goes out at most this long after the last response (scenario: locked at 10); 0 = off"},
			timing.DefaultSystemIdleCap, func(s *Spec) *time.Duration { return &s.Replay.SystemIdleGapCap }).asks(opt(func(set *scenario.Settings) *scenario.Opt[time.Duration] { return &set.SystemIdleGapCap })),
		row(Setting{Flag: "warmup-requests-per-lane", Key: "warmup_requests_per_lane", Field: "Config.WarmupRequestsPerLane", Unit: UnitRequests, Range: nonNegative("0 = no request-bounded cache warmup"), Lock: Filled,
			Help: "v1.0: after the primers, every lane replays its tree with no idle delay and 1 output token until it has sent this many more requests"},
			0, func(s *Spec) *int { return &s.Replay.WarmupRequestsPerLane }).asks(opt(func(set *scenario.Settings) *scenario.Opt[int] { return &set.WarmupRequestsPerLane })),
		row(Setting{Flag: "agentic-cache-warmup-duration", Field: "Config.AgenticCacheWarmupDuration", Unit: UnitSeconds, Range: nonNegative("0 = no timed cache warmup"), Lock: Excludes,
			Help: "v1.0: the same cache warmup, bounded by seconds instead of requests (exclusive with --warmup-requests-per-lane)"},
			time.Duration(0), func(s *Spec) *time.Duration { return &s.Replay.AgenticCacheWarmupDuration }).asks(opt(func(set *scenario.Settings) *scenario.Opt[time.Duration] { return &set.AgenticCacheWarmup })),
		row(Setting{Flag: "burst-phase-starts", Field: "Config.BurstPhaseStarts",
			Help: "v1.0: send every primer at once and start each lane's profiling on its own first request, instead of on the recorded timeline"},
			false, func(s *Spec) *bool { return &s.Replay.BurstPhaseStarts }),
		row(Setting{Flag: "allow-dataset-wrap", Field: "Config.AllowDatasetWrap",
			Help: "v1.0: let more lanes than traces replay the same traces (always allowed with a cache-bust marker)"},
			false, func(s *Spec) *bool { return &s.Replay.AllowDatasetWrap }),

		// Output.
		row(Setting{Flag: "stats-interval", Key: "stats_interval", Field: "Spec.StatsInterval", Unit: UnitSeconds, Range: positive("the period of the live statistics lines"), Lock: Filled,
			Help: "seconds between live statistics lines when the output is not a terminal"},
			ui.DefaultInterval, func(s *Spec) *time.Duration { return &s.StatsInterval }).asks(opt(func(set *scenario.Settings) *scenario.Opt[time.Duration] { return &set.StatsInterval })),
		row(Setting{Flag: "slice-duration", Key: "slice_duration", Field: "Spec.SliceDuration", Unit: UnitSeconds, Range: nonNegative("0 = no timeslices"), Lock: Filled,
			Help: "timeslice length in seconds for timeslice exports (0 = none)"},
			time.Duration(0), func(s *Spec) *time.Duration { return &s.SliceDuration }).asks(opt(func(set *scenario.Settings) *scenario.Opt[time.Duration] { return &set.SliceDuration })),
		row(Setting{Flag: "no-server-metrics", Field: "Spec.ServerMetrics.Off",
			Help: "do not scrape the server's /metrics"},
			false, func(s *Spec) *bool { return &s.ServerMetrics.Off }),
		row(Setting{Flag: "no-gpu-telemetry", Key: "no_gpu_telemetry", Field: "Spec.NoGPUTelemetry", Lock: Filled,
			Help: "collect no GPU telemetry (not even from the default DCGM ports)"},
			false, func(s *Spec) *bool { return &s.NoGPUTelemetry }).asks(opt(func(set *scenario.Settings) *scenario.Opt[bool] { return &set.NoGPUTelemetry })),
		row(Setting{Flag: "metrics-listen", Field: "Spec.MetricsListen",
			Help: "serve the run's live client-side figures in the Prometheus exposition format at http://ADDR/metrics (e.g. 127.0.0.1:9464; one per shard: give each its own port; docs/metrics-listen.md)"},
			"", func(s *Spec) *string { return &s.MetricsListen }),
		row(Setting{Flag: "output-artifact-dir", Aliases: []string{"artifact-dir"}, Field: "Spec.OutputDir", Key: "output_artifact_dir",
			Help: "directory for all artifacts"},
			"artifacts", func(s *Spec) *string { return &s.OutputDir }),
		row(Setting{Flag: "no-plot", Field: "Spec.NoPlot", Help: "do not render metrics_plots.png"},
			false, func(s *Spec) *bool { return &s.NoPlot }),
		row(Setting{Flag: "overwrite-artifacts", Field: "Spec.OverwriteArtifacts",
			Help: "use an --output-artifact-dir that holds another run's artifacts: remove them first (without it such a folder is refused)"},
			false, func(s *Spec) *bool { return &s.OverwriteArtifacts }),
	}
}
