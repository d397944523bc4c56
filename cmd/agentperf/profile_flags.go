package main

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/internal/cliflags"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
)

// profileFlags holds every flag of `agentperf profile`. Flag names are
// aiperf's, so InferenceX's command line runs unchanged.
type profileFlags struct {
	// discovered says where the model came from when --model was
	// omitted (discoverModel), for the run log.
	discovered string

	// spec holds the settings of run.Settings, bound to their flags
	// (bindSettings): parsing the flags fills it.
	spec run.Spec

	scenario string

	// text holds the flags of run.TextSettings as typed (bindTextSettings).
	text textFlags

	endpointType  string
	apiKey        string
	trustRemote   bool
	concurrency   string
	graceWarmup   float64
	generation    string
	graceAgentic  float64
	gpuTelemetry  []string
	profileRuns   int
	runCooldown   float64
	confidence    float64
	convMetric    string
	convThreshold float64
	// shard holds the sharding flags (profile_shard.go).
	shard       *shardFlags
	cpuProfile  string
	memProfile  string
	pprofAddr   string
	uiType      string
	exportLevel string
	// resetCache is profile's --reset-prefix-cache (sweep and search
	// have theirs among the point flags).
	resetCache bool
	// output is profile's --output (text or json).
	output string

	data *datasetFlags
}

func addProfileFlags(fs *pflag.FlagSet) *profileFlags {
	p := &profileFlags{spec: run.NewSpec()}
	cliflags.AddConfigFlag(fs)
	bindSettings(fs, &p.spec)
	p.text = bindTextSettings(fs)
	fs.StringVar(&p.scenario, "scenario", "", "scenario preset that locks and fills settings: "+strings.Join(scenario.Names(), ", ")+" (the presets are listed under Scenarios below)")

	fs.StringVar(&p.endpointType, "endpoint-type", "chat", "endpoint type (only chat is supported)")
	fs.StringVar(&p.apiKey, "api-key", "", "API key sent as a bearer token (default $OPENAI_API_KEY); never logged or exported")
	fs.BoolVar(&p.trustRemote, "tokenizer-trust-remote-code", false, "accepted for compatibility; agentperf runs no tokenizer code")
	fs.Var(intText{&p.concurrency}, "concurrency", "number of lanes: concurrent sessions replayed (required)")
	fs.Float64Var(&p.graceWarmup, "warmup-grace-period", 0, "maximum seconds for the warmup phase (0 = unlimited)")
	fs.Float64Var(&p.graceAgentic, "agentic-warmup-grace-period", 0, "v1.0: maximum seconds for the whole warmup (takes precedence over --warmup-grace-period)")
	fs.StringVar(&p.generation, "agentx-generation", "", "AgentX replay semantics: "+strings.Join(timing.GenerationNames(), ", ")+" (default "+timing.DefaultGeneration+"; also $"+envGeneration+" or --scenario NAME@GEN)")
	fs.StringSliceVar(&p.gpuTelemetry, "gpu-telemetry", nil, "GPU exporters to scrape besides the default DCGM ports (localhost:9400, :9401), space- or comma-separated: NVIDIA DCGM exporter or AMD device-metrics-exporter URLs (host:port is enough); given alone, turns telemetry on under a preset that has it off; also $AIPERF_GPU_TELEMETRY_URL (docs/gpu-telemetry.md)")
	cliflags.MarkNargs(fs, "gpu-telemetry")
	fs.IntVar(&p.profileRuns, "num-profile-runs", 1, "profile runs, 1 to 10: each into OUT/profile_runs/run_000K, then a pooled summary with confidence intervals in OUT/aggregate (docs/repeated-runs.md)")
	fs.Float64Var(&p.runCooldown, "profile-run-cooldown-seconds", 0, "pause between profile runs")
	fs.Float64Var(&p.confidence, "confidence-level", 0.95, "confidence level of the pooled intervals")
	fs.StringVar(&p.convMetric, "convergence-metric", "", "stop the profile runs early (from the third) once this headline metric's interval is narrow enough, e.g. time_to_first_token.p50")
	fs.Float64Var(&p.convThreshold, "convergence-threshold", 0.05, "the interval's largest relative width (high − low) / mean for --convergence-metric")
	fs.StringVar(&p.uiType, "ui-type", "dashboard", "live view: dashboard (full screen with live charts; simple when not on a capable terminal), simple (progress bars on a terminal, log lines elsewhere), none")
	fs.StringVar(&p.exportLevel, "export-level", "records", "records: every request in profile_export.jsonl (the only level; summary and raw are refused)")
	fs.StringVar(&p.cpuProfile, "cpuprofile", "", "write a CPU profile of agentperf itself to this file")
	fs.StringVar(&p.memProfile, "memprofile", "", "write a heap profile of agentperf itself to this file at the end")
	fs.StringVar(&p.pprofAddr, "pprof-addr", "", "serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060)")
	p.data = addDatasetFlags(fs)
	p.shard = addShardFlags(fs)
	cliflags.SetGroups(fs, profileHelpGroups, "Other")

	for _, r := range run.RefusedSettings() {
		fs.String(r.Flag, "", "not supported yet: "+r.Why)
		f := fs.Lookup(r.Flag)
		f.Hidden = true
		if r.Bool {
			f.NoOptDefVal = "true"
		}
	}
	return p
}

// profileHelpGroups groups the flags in `profile --help`; flags not listed
// (added later, or by a shared helper) are shown under "Other flags".
var profileHelpGroups = []cliflags.Group{
	{Title: "Endpoint", Flags: []string{"url", "endpoint", "endpoint-type", "model", "model-names", "streaming", "api-key", "header", "insecure",
		"request-timeout-seconds", "connect-timeout-seconds", "wait-for-model-timeout", "wait-for-model-mode", "wait-for-model-interval", "use-server-token-count", "use-legacy-max-tokens", "ignore-eos",
		"extra-inputs", "use-dynamo-conv-aware-routing", "dynamo-session-timeout-seconds", "server-metrics", "no-server-metrics", "gpu-telemetry", "no-gpu-telemetry"}},
	{Title: "Load", Flags: []string{"concurrency", "benchmark-duration", "benchmark-grace-period", "warmup-grace-period", "random-seed",
		"failed-request-threshold", "trajectory-start-min-ratio", "trajectory-start-max-ratio", "inter-turn-delay-cap-seconds", "trace-idle-gap-cap-seconds",
		"system-idle-gap-cap-seconds", "warmup-requests-per-lane", "agentic-cache-warmup-duration", "agentic-warmup-grace-period",
		"burst-phase-starts", "allow-dataset-wrap", "cache-bust"}},
	{Title: "Dataset", Flags: []string{"input-file", "public-dataset", "hf-dataset", "custom-dataset-type", "max-context-length",
		"num-dataset-entries", "synthesis-max-osl", "skip-invalid-traces", "dataset-cache-dir", "no-dataset-cache",
		"tokenizer", "tokenizer-revision", "tokenizer-trust-remote-code", "apply-chat-template"}},
	{Title: "Output", Flags: []string{"output", "output-artifact-dir", "artifact-dir", "overwrite-artifacts", "metrics-listen", "ui-type", "stats-interval", "slice-duration", "export-level", "no-plot"}},
	{Title: "Repeated runs (docs/repeated-runs.md)", Flags: []string{"num-profile-runs", "profile-run-cooldown-seconds", "confidence-level", "convergence-metric", "convergence-threshold"}},
	{Title: "Scenario", Flags: []string{"config", "scenario", "agentx-generation", "unsafe-override", "fail-on-invalid"}},
	{Title: "Sharding (docs/distributed.md)", Flags: []string{"shard", "shard-count", "shard-rendezvous", "shard-join-timeout"}},
}

// intText is a flag value kept as text, so that a value such as "8,16"
// gets a precise error later, but shown as an int in the help.
type intText struct{ s *string }

func (v intText) String() string {
	if v.s == nil {
		return ""
	}
	return *v.s
}
func (v intText) Set(s string) error { *v.s = s; return nil }
func (v intText) Type() string       { return "int" }

// rejectUnsupported returns a usage error naming every refused flag used
// (run.RefusedSettings).
func rejectUnsupported(fs *pflag.FlagSet) error {
	var msgs []string
	for _, r := range run.RefusedSettings() {
		if fs.Changed(r.Flag) {
			msgs = append(msgs, fmt.Sprintf("--%s: %s", r.Flag, r.Why))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return usagef("unsupported flags (exit 2, nothing was run):\n  %s", strings.Join(msgs, "\n  "))
}

// concurrencyValue parses --concurrency as exactly one positive integer.
func concurrencyValue(s string) (int, error) {
	if s == "" {
		return 0, usagef("--concurrency is required (one integer: the number of lanes)")
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return 0, usagef("--concurrency %q: must be one positive integer (for several concurrencies, one run each, use 'agentperf sweep --concurrency %s')", s, s)
	}
	return n, nil
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// flagRange is the range of a numeric flag, in its unit.
type flagRange struct {
	*run.Range
	unit run.Unit
}

// datasetRanges are the ranges of the corpus flags (datasetFlags); the
// ranges of the settings are in their table (run.Settings).
var datasetRanges = map[string]flagRange{
	"max-context-length":  {&run.Range{Max: math.Inf(1), What: "0 = keep every trace"}, "tokens"},
	"num-dataset-entries": {&run.Range{Max: math.Inf(1), What: "0 = all"}, "traces"},
	"synthesis-max-osl":   {&run.Range{Max: math.Inf(1), What: "0 = no cap"}, "tokens"},
}

// profileRanges are the ranges of profile's numeric flags: the settings'
// (run.Settings) and the corpus flags'.
func profileRanges() map[string]flagRange {
	out := maps.Clone(datasetRanges)
	for _, st := range run.Settings() {
		if st.Range != nil {
			out[st.Flag] = flagRange{st.Range, st.Unit}
		}
	}
	// The profile command's own.
	out["warmup-grace-period"] = flagRange{&run.Range{Max: math.Inf(1), What: "0 = unlimited"}, run.UnitSeconds}
	out["agentic-warmup-grace-period"] = flagRange{&run.Range{Max: math.Inf(1), What: "0 = unlimited"}, run.UnitSeconds}
	return out
}

// bindSettings registers a flag for every setting of run.Settings,
// bound to its field of s (which takes the setting's default).
func bindSettings(fs *pflag.FlagSet, s *run.Spec) {
	for _, st := range run.Settings() {
		v := st.Bind(s)
		for i, name := range append([]string{st.Flag}, st.Aliases...) {
			short, help := st.Short, st.Help
			if i > 0 {
				short, help = "", "alias of --"+st.Flag
			}
			switch v := v.(type) {
			case *string:
				fs.StringVarP(v, name, short, *v, help)
			case *[]string:
				fs.StringSliceVarP(v, name, short, *v, help)
			case *bool:
				fs.BoolVarP(v, name, short, *v, help)
			case *int:
				fs.IntVarP(v, name, short, *v, help)
			case *int64:
				fs.Int64VarP(v, name, short, *v, help)
			case *float64:
				fs.Float64VarP(v, name, short, *v, help)
			case *time.Duration:
				fs.VarP(&secondsValue{d: v}, name, short, help)
			default:
				panic(fmt.Sprintf("run.Settings: --%s binds a %T", st.Flag, v))
			}
		}
	}
}

// textFlags are the values of the flags of run.TextSettings as typed,
// by flag name.
type textFlags map[string]*textFlag

// textFlag is the value of one text setting's flag: a repeated or list
// flag's values, or a single flag's value.
type textFlag struct {
	vals   []string
	one    string
	single bool
}

// values are the flag's values in the order given (none: not given).
func (t *textFlag) values() []string {
	if !t.single {
		return t.vals
	}
	if t.one == "" {
		return nil
	}
	return []string{t.one}
}

// bindTextSettings registers a flag for every row of run.TextSettings.
func bindTextSettings(fs *pflag.FlagSet) textFlags {
	out := textFlags{}
	for _, t := range run.TextSettings() {
		v := &textFlag{single: !t.Repeated && !t.List}
		switch {
		case t.Repeated:
			fs.StringArrayVarP(&v.vals, t.Flag, t.Short, nil, t.Help)
		case t.List:
			fs.StringSliceVarP(&v.vals, t.Flag, t.Short, nil, t.Help)
		default:
			fs.StringVarP(&v.one, t.Flag, t.Short, "", t.Help)
		}
		out[t.Flag] = v
	}
	return out
}

// apply parses every text setting's values into s (run.TextSetting.Apply).
func (tf textFlags) apply(s *run.Spec) error {
	for _, t := range run.TextSettings() {
		if err := t.Apply(s, tf[t.Flag].values()); err != nil {
			return asUsage(err)
		}
	}
	return nil
}

// secondsValue is a time.Duration flag written in seconds (a float, as
// aiperf's), shown and parsed as a float64 flag is; once set, String
// gives the value as typed (a range error names it, NaN included).
type secondsValue struct {
	d     *time.Duration
	typed float64
	given bool
}

func (v *secondsValue) String() string {
	if v.given {
		return strconv.FormatFloat(v.typed, 'g', -1, 64)
	}
	return strconv.FormatFloat(v.d.Seconds(), 'g', -1, 64)
}
func (v *secondsValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	v.typed, v.given, *v.d = f, true, seconds(f)
	return nil
}
func (v *secondsValue) Type() string { return "float64" }

// checkRanges returns a usage error for the first flag of fs given a value
// outside its range in ranges (in flag order), naming the range.
func checkRanges(fs *pflag.FlagSet, ranges map[string]flagRange) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		r, ok := ranges[f.Name]
		if err != nil || !ok || !fs.Changed(f.Name) {
			return
		}
		v, perr := strconv.ParseFloat(f.Value.String(), 64)
		if perr != nil || r.Contains(v) {
			return // in range, or not a number (the flag's own parser refused it)
		}
		err = usagef("--%s %s: out of range: want %s (%s)", f.Name, f.Value.String(), r.Text(r.unit), r.What)
	})
	return err
}
