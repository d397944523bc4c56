package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
	"github.com/agentperf/agentperf/ui"
)

// profileFlags holds every flag of `agentperf profile`. Flag names are
// aiperf's, so InferenceX's command line runs unchanged.
type profileFlags struct {
	// discovered says where the model came from when --model was
	// omitted (discoverModel), for the run log.
	discovered string

	applyChatTemplate bool

	scenario       string
	unsafeOverride bool
	failOnInvalid  bool

	url             string
	endpoint        string
	endpointType    string
	streaming       bool
	models          []string
	apiKey          string
	insecure        bool
	headers         []string
	metricsHeaders  []string
	requestTO       float64
	connectTO       float64
	legacyMaxTok    bool
	extraInputs     []string
	ignoreEOS       bool
	serverTokens    bool
	cacheBust       string
	tokenizer       string
	trustRemote     bool
	tokenizerRev    string
	concurrency     string
	duration        float64
	graceBench      float64
	graceWarmup     float64
	seed            int64
	threshold       float64
	startMin        float64
	startMax        float64
	delayCap        float64
	idleGapCap      float64
	sysIdleCap      float64
	generation      string
	warmupPerLane   int
	cacheWarmup     float64
	graceAgentic    float64
	burstStarts     bool
	allowWrap       bool
	dynamoRouting   bool
	dynamoTimeout   int
	statsInterval   float64
	sliceDuration   float64
	serverMetrics   []string
	noServerMetrics bool
	noGPUTelemetry  bool
	gpuTelemetry    []string
	metricsListen   string
	profileRuns     int
	runCooldown     float64
	confidence      float64
	convMetric      string
	convThreshold   float64
	outputDir       string
	overwrite       bool
	// shard holds the sharding flags (profile_shard.go).
	shard       *shardFlags
	noPlot      bool
	cpuProfile  string
	memProfile  string
	pprofAddr   string
	uiType      string
	exportLevel string
	// The readiness wait (aiperf's names).
	waitTimeout  float64
	waitInterval float64
	waitMode     string
	// resetCache is profile's --reset-prefix-cache (sweep and search
	// have theirs among the point flags).
	resetCache bool
	// output is profile's --output (text or json).
	output string

	data *datasetFlags

	// Flags of later milestones and of other modes: parsed so they can be
	// rejected with a clear message instead of "unknown flag".
	unsupported map[string]string
}

// unsupportedFlags are aiperf flags agentperf understands but does not
// implement yet; each maps to the reason printed when it is used.
var unsupportedFlags = map[string]string{
	"request-rate":                           "only the agentic replay timing mode exists in agentperf",
	"request-count":                          "only the agentic replay timing mode exists; the run is bounded by --benchmark-duration",
	"fixed-schedule":                         "only the agentic replay timing mode exists in agentperf",
	"profile-run-disable-warmup-after-first": "every profile run replays its warmup (the AgentX lanes' start states are built by it); see docs/repeated-runs.md",
	"synthesis-max-isl":                      "input truncation would change the recorded prefix structure; not supported",
	"ignore-trace-delays":                    "not supported: recorded inter-turn delays are part of the workload",
	"prompt-corpus":                          "agentperf synthesizes prompts from its own coding-agent corpus only",
}

// boolUnsupported are the unsupported flags that take no value.
var boolUnsupported = map[string]bool{
	"fixed-schedule":                         true,
	"ignore-trace-delays":                    true,
	"profile-run-disable-warmup-after-first": true,
}

func addProfileFlags(fs *pflag.FlagSet) *profileFlags {
	p := &profileFlags{}
	addConfigFlag(fs)
	fs.StringVar(&p.scenario, "scenario", "", "scenario preset that locks and fills settings: "+strings.Join(scenario.Names(), ", ")+" (the presets are listed under Scenarios below)")
	fs.BoolVar(&p.unsafeOverride, "unsafe-override", false, "run despite scenario violations; the run is marked submission_valid=false")
	fs.BoolVar(&p.failOnInvalid, "fail-on-invalid", false, "exit 1 when the run is not a valid submission, whatever the reason (under --scenario the default follows aiperf: unsafe_override and the overflow rate alone exit 0)")

	fs.StringVar(&p.url, "url", "", "server base URL, e.g. http://localhost:8000, or sim:// (in-process simulator, e.g. sim://?max-model-len=131072)")
	fs.StringVar(&p.endpoint, "endpoint", replay.DefaultEndpoint, "endpoint path appended to --url")
	fs.StringVar(&p.endpointType, "endpoint-type", "chat", "endpoint type (only chat is supported)")
	fs.BoolVar(&p.streaming, "streaming", false, "stream responses (SSE); required for TTFT and ITL")
	fs.StringSliceVarP(&p.models, "model", "m", nil, "model name(s) sent on the wire; several (comma-separated or repeated) map a trace's recorded models in order (omitted: the one model the server lists at /v1/models)")
	fs.StringSliceVar(&p.models, "model-names", nil, "alias of --model")
	fs.StringVar(&p.apiKey, "api-key", "", "API key sent as a bearer token (default $OPENAI_API_KEY); never logged or exported")
	fs.BoolVar(&p.insecure, "insecure", false, "skip TLS certificate verification (verification is on by default)")
	fs.StringArrayVarP(&p.headers, "header", "H", nil, "extra HTTP header 'Name: value' (repeatable)")
	fs.Float64Var(&p.requestTO, "request-timeout-seconds", replay.DefaultRequestTimeout.Seconds(), "timeout of one request including its whole stream (0 = none)")
	fs.Float64Var(&p.connectTO, "connect-timeout-seconds", replay.DefaultConnectTimeout.Seconds(), "timeout for connecting to the server (0 = none)")
	fs.Float64Var(&p.waitTimeout, "wait-for-model-timeout", 0, "seconds to wait for the server to be ready before the first request, probing it and logging each try (0 = no wait: a server that is not up fails the first requests)")
	fs.StringVar(&p.waitMode, "wait-for-model-mode", "inference", "how readiness is probed: models (GET /v1/models lists the model), inference (a one-token chat request answers 200) or both")
	fs.Float64Var(&p.waitInterval, "wait-for-model-interval", 5, "seconds between two readiness probes")
	fs.BoolVar(&p.legacyMaxTok, "use-legacy-max-tokens", false, "send max_tokens instead of max_completion_tokens")
	fs.StringArrayVar(&p.extraInputs, "extra-inputs", nil, "extra request body field key:value (JSON value or string) or a JSON object (repeatable)")
	fs.BoolVar(&p.ignoreEOS, "ignore-eos", false, "send ignore_eos=true (the scenario forces it)")
	fs.BoolVar(&p.serverTokens, "use-server-token-count", false, "take ISL/OSL from the server's usage (a successful response without usage has no ISL/OSL, and the run warns with the count)")
	fs.StringVar(&p.cacheBust, "cache-bust", "", "cache-bust marker placement: none, system_prefix, system_suffix, first_turn_prefix, first_turn_suffix (scenario: first_turn_prefix)")
	fs.BoolVar(&p.applyChatTemplate, "apply-chat-template", false, "read the model's chat template (tokenizer_config.json beside the tokenizer) and log what it adds to each prompt; requests still carry chat messages and ISL is the server's count (as in aiperf)")
	fs.StringVar(&p.tokenizer, "tokenizer", "", "tokenizer for prompt synthesis: an HF model id (downloaded into the hub cache when missing), a tokenizer.json/.tiktoken file or folder, or 'builtin' (approximate) (default: the --model name; builtin for --url sim:// with a model name that is not an HF id)")
	fs.BoolVar(&p.trustRemote, "tokenizer-trust-remote-code", false, "accepted for compatibility; agentperf runs no tokenizer code")
	fs.StringVar(&p.tokenizerRev, "tokenizer-revision", "main", "branch, tag or commit of an HF model id tokenizer")
	fs.Var(intText{&p.concurrency}, "concurrency", "number of lanes: concurrent sessions replayed (required)")
	fs.Float64Var(&p.duration, "benchmark-duration", 0, "profiling duration in seconds (scenario default 1800, minimum 900)")
	fs.Float64Var(&p.graceBench, "benchmark-grace-period", replay.DefaultGracePeriod.Seconds(), "seconds in-flight requests may finish after the duration before they are cancelled (0 = cancel them at once)")
	fs.Float64Var(&p.graceWarmup, "warmup-grace-period", 0, "maximum seconds for the warmup phase (0 = unlimited)")
	fs.Int64Var(&p.seed, "random-seed", 0, "seed for start turns and prompt text (scenario: filled in and logged when absent)")
	fs.Float64Var(&p.threshold, "failed-request-threshold", 0, "abort when the failure rate of profiling requests is above this fraction with 99.9% confidence, judged in send order (0 = off; see docs/failed-request-threshold.md)")
	fs.Float64Var(&p.startMin, "trajectory-start-min-ratio", timing.DefaultStartMinRatio, "lower bound of each lane's start turn as a fraction of the trace's turns")
	fs.Float64Var(&p.startMax, "trajectory-start-max-ratio", timing.DefaultStartMaxRatio, "upper bound of each lane's start turn as a fraction of the trace's turns")
	fs.Float64Var(&p.delayCap, "inter-turn-delay-cap-seconds", timing.DefaultInterTurnDelayCap.Seconds(), "v0.2: cap on each recorded inter-turn delay, 0 = no cap (scenario: locked at 60)")
	fs.Float64Var(&p.idleGapCap, "trace-idle-gap-cap-seconds", 0, "v0.3: start-to-start gaps of a trace's merged timeline longer than this are shortened to it (default and scenario lock 60); v1.0: a tree idle this long has its pending timers pulled in (default off); 0 = off")
	fs.Float64Var(&p.sysIdleCap, "system-idle-gap-cap-seconds", timing.DefaultSystemIdleCap.Seconds(), "v1.0: with nothing in flight anywhere, the next request goes out at most this long after the last response (scenario: locked at 10); 0 = off")
	fs.IntVar(&p.warmupPerLane, "warmup-requests-per-lane", 0, "v1.0: after the primers, every lane replays its tree with no idle delay and 1 output token until it has sent this many more requests")
	fs.Float64Var(&p.cacheWarmup, "agentic-cache-warmup-duration", 0, "v1.0: the same cache warmup, bounded by seconds instead of requests (exclusive with --warmup-requests-per-lane)")
	fs.Float64Var(&p.graceAgentic, "agentic-warmup-grace-period", 0, "v1.0: maximum seconds for the whole warmup (takes precedence over --warmup-grace-period)")
	fs.BoolVar(&p.burstStarts, "burst-phase-starts", false, "v1.0: send every primer at once and start each lane's profiling on its own first request, instead of on the recorded timeline")
	fs.BoolVar(&p.allowWrap, "allow-dataset-wrap", false, "v1.0: let more lanes than traces replay the same traces (always allowed with a cache-bust marker)")
	fs.BoolVar(&p.dynamoRouting, "use-dynamo-conv-aware-routing", false, "send Dynamo's nvext.session_control (session id, timeout, bind) with every request")
	fs.IntVar(&p.dynamoTimeout, "dynamo-session-timeout-seconds", replay.DefaultDynamoSessionTimeoutSeconds, "session timeout sent in nvext.session_control")
	fs.StringVar(&p.generation, "agentx-generation", "", "AgentX replay semantics: "+strings.Join(timing.GenerationNames(), ", ")+" (default "+timing.DefaultGeneration+"; also $"+envGeneration+" or --scenario NAME@GEN)")
	fs.Float64Var(&p.statsInterval, "stats-interval", ui.DefaultInterval.Seconds(), "seconds between live statistics lines when the output is not a terminal")
	fs.Float64Var(&p.sliceDuration, "slice-duration", 0, "timeslice length in seconds for timeslice exports (0 = none)")
	fs.StringSliceVar(&p.serverMetrics, "server-metrics", nil, "extra Prometheus /metrics URLs to scrape (space- or comma-separated)")
	fs.StringArrayVar(&p.metricsHeaders, "server-metrics-header", nil, "HTTP header 'Name: value' sent with every /metrics scrape (repeatable); scrapes of --url's host also get the -H headers and the credentials")
	fs.BoolVar(&p.noServerMetrics, "no-server-metrics", false, "do not scrape the server's /metrics")
	fs.BoolVar(&p.noGPUTelemetry, "no-gpu-telemetry", false, "collect no GPU telemetry (not even from the default DCGM ports)")
	fs.StringSliceVar(&p.gpuTelemetry, "gpu-telemetry", nil, "GPU exporters to scrape besides the default DCGM ports (localhost:9400, :9401), space- or comma-separated: NVIDIA DCGM exporter or AMD device-metrics-exporter URLs (host:port is enough); given alone, turns telemetry on under a preset that has it off; also $AIPERF_GPU_TELEMETRY_URL (docs/gpu-telemetry.md)")
	markNargs(fs, "gpu-telemetry")
	fs.IntVar(&p.profileRuns, "num-profile-runs", 1, "profile runs, 1 to 10: each into OUT/profile_runs/run_000K, then a pooled summary with confidence intervals in OUT/aggregate (docs/repeated-runs.md)")
	fs.Float64Var(&p.runCooldown, "profile-run-cooldown-seconds", 0, "pause between profile runs")
	fs.Float64Var(&p.confidence, "confidence-level", 0.95, "confidence level of the pooled intervals")
	fs.StringVar(&p.convMetric, "convergence-metric", "", "stop the profile runs early (from the third) once this headline metric's interval is narrow enough, e.g. time_to_first_token.p50")
	fs.Float64Var(&p.convThreshold, "convergence-threshold", 0.05, "the interval's largest relative width (high − low) / mean for --convergence-metric")
	fs.StringVar(&p.metricsListen, "metrics-listen", "", "serve the run's live client-side figures in the Prometheus exposition format at http://ADDR/metrics (e.g. 127.0.0.1:9464; one per shard: give each its own port; docs/metrics-listen.md)")
	fs.StringVar(&p.outputDir, "output-artifact-dir", "artifacts", "directory for all artifacts")
	fs.StringVar(&p.outputDir, "artifact-dir", "artifacts", "alias of --output-artifact-dir")
	fs.BoolVar(&p.noPlot, "no-plot", false, "do not render metrics_plots.png")
	fs.BoolVar(&p.overwrite, "overwrite-artifacts", false, "use an --output-artifact-dir that holds another run's artifacts: remove them first (without it such a folder is refused)")
	fs.StringVar(&p.uiType, "ui-type", "dashboard", "live view: dashboard (full screen with live charts; simple when not on a capable terminal), simple (progress bars on a terminal, log lines elsewhere), none")
	fs.StringVar(&p.exportLevel, "export-level", "records", "records: every request in profile_export.jsonl (the only level; summary and raw are refused)")
	fs.StringVar(&p.cpuProfile, "cpuprofile", "", "write a CPU profile of agentperf itself to this file")
	fs.StringVar(&p.memProfile, "memprofile", "", "write a heap profile of agentperf itself to this file at the end")
	fs.StringVar(&p.pprofAddr, "pprof-addr", "", "serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060)")
	p.data = addDatasetFlags(fs)
	p.shard = addShardFlags(fs)
	setHelpGroups(fs, profileHelpGroups, "Other")

	p.unsupported = map[string]string{}
	names := make([]string, 0, len(unsupportedFlags))
	for n := range unsupportedFlags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var sink string
		f := fs.VarPF(newAnyValue(&sink), n, "", "not supported yet: "+unsupportedFlags[n])
		f.Hidden = true
		if boolUnsupported[n] {
			f.NoOptDefVal = "true"
		}
	}
	return p
}

// profileHelpGroups groups the flags in `profile --help`; flags not listed
// (added later, or by a shared helper) are shown under "Other flags".
var profileHelpGroups = []flagGroup{
	{"Endpoint", []string{"url", "endpoint", "endpoint-type", "model", "model-names", "streaming", "api-key", "header", "insecure",
		"request-timeout-seconds", "connect-timeout-seconds", "wait-for-model-timeout", "wait-for-model-mode", "wait-for-model-interval", "use-server-token-count", "use-legacy-max-tokens", "ignore-eos",
		"extra-inputs", "use-dynamo-conv-aware-routing", "dynamo-session-timeout-seconds", "server-metrics", "no-server-metrics", "gpu-telemetry", "no-gpu-telemetry"}},
	{"Load", []string{"concurrency", "benchmark-duration", "benchmark-grace-period", "warmup-grace-period", "random-seed",
		"failed-request-threshold", "trajectory-start-min-ratio", "trajectory-start-max-ratio", "inter-turn-delay-cap-seconds", "trace-idle-gap-cap-seconds",
		"system-idle-gap-cap-seconds", "warmup-requests-per-lane", "agentic-cache-warmup-duration", "agentic-warmup-grace-period",
		"burst-phase-starts", "allow-dataset-wrap", "cache-bust"}},
	{"Dataset", []string{"input-file", "public-dataset", "hf-dataset", "custom-dataset-type", "max-context-length",
		"num-dataset-entries", "synthesis-max-osl", "skip-invalid-traces", "dataset-cache-dir", "no-dataset-cache",
		"tokenizer", "tokenizer-revision", "tokenizer-trust-remote-code", "apply-chat-template"}},
	{"Output", []string{"output", "output-artifact-dir", "artifact-dir", "overwrite-artifacts", "metrics-listen", "ui-type", "stats-interval", "slice-duration", "export-level", "no-plot"}},
	{"Repeated runs (docs/repeated-runs.md)", []string{"num-profile-runs", "profile-run-cooldown-seconds", "confidence-level", "convergence-metric", "convergence-threshold"}},
	{"Scenario", []string{"config", "scenario", "agentx-generation", "unsafe-override", "fail-on-invalid"}},
	{"Sharding (docs/distributed.md)", []string{"shard", "shard-count", "shard-rendezvous", "shard-join-timeout"}},
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

// anyValue accepts any value (or none) so unsupported flags parse and can be
// rejected with their reason.
type anyValue struct{ s *string }

func newAnyValue(s *string) *anyValue  { return &anyValue{s} }
func (a *anyValue) String() string     { return *a.s }
func (a *anyValue) Set(v string) error { *a.s = v; return nil }
func (a *anyValue) Type() string       { return "value" }

// rejectUnsupported returns a usage error naming every unsupported flag used.
func rejectUnsupported(fs *pflag.FlagSet) error {
	var msgs []string
	fs.Visit(func(f *pflag.Flag) {
		if why, ok := unsupportedFlags[f.Name]; ok {
			msgs = append(msgs, fmt.Sprintf("--%s: %s", f.Name, why))
		}
	})
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

// flagRange is the range of a numeric flag's value.
type flagRange struct {
	min, max   float64
	minOpen    bool   // min itself is out of range
	unit, what string // "seconds", "the profiling window's length"
}

// profileRanges are the ranges of profile's numeric flags; a value given
// outside its range is a usage error that names the range.
var profileRanges = map[string]flagRange{
	"benchmark-duration":             {min: 0, minOpen: true, max: math.Inf(1), unit: "seconds", what: "the profiling window's length"},
	"stats-interval":                 {min: 0, minOpen: true, max: math.Inf(1), unit: "seconds", what: "the period of the live statistics lines"},
	"dynamo-session-timeout-seconds": {min: 0, minOpen: true, max: math.Inf(1), unit: "seconds", what: "the session timeout"},
	"benchmark-grace-period":         {max: math.Inf(1), unit: "seconds", what: "0 cancels the requests in flight at the end at once"},
	"request-timeout-seconds":        {max: math.Inf(1), unit: "seconds", what: "0 = no timeout"},
	"connect-timeout-seconds":        {max: math.Inf(1), unit: "seconds", what: "0 = no timeout"},
	"warmup-grace-period":            {max: math.Inf(1), unit: "seconds", what: "0 = unlimited"},
	"agentic-warmup-grace-period":    {max: math.Inf(1), unit: "seconds", what: "0 = unlimited"},
	"agentic-cache-warmup-duration":  {max: math.Inf(1), unit: "seconds", what: "0 = no timed cache warmup"},
	"inter-turn-delay-cap-seconds":   {max: math.Inf(1), unit: "seconds", what: "0 = no cap"},
	"trace-idle-gap-cap-seconds":     {max: math.Inf(1), unit: "seconds", what: "the longest start-to-start gap kept"},
	"system-idle-gap-cap-seconds":    {max: math.Inf(1), unit: "seconds", what: "the longest idle stretch kept"},
	"slice-duration":                 {max: math.Inf(1), unit: "seconds", what: "0 = no timeslices"},
	"warmup-requests-per-lane":       {max: math.Inf(1), unit: "requests", what: "0 = no request-bounded cache warmup"},
	"max-context-length":             {max: math.Inf(1), unit: "tokens", what: "0 = keep every trace"},
	"num-dataset-entries":            {max: math.Inf(1), unit: "traces", what: "0 = all"},
	"synthesis-max-osl":              {max: math.Inf(1), unit: "tokens", what: "0 = no cap"},
	"trajectory-start-min-ratio":     {max: 1, unit: "", what: "a fraction of the trace's turns"},
	"trajectory-start-max-ratio":     {max: 1, unit: "", what: "a fraction of the trace's turns"},
}

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
		if perr != nil {
			return // not a number: the flag's own parser refused it already
		}
		if !math.IsNaN(v) && (v > r.min || (v == r.min && !r.minOpen)) && v <= r.max {
			return
		}
		err = usagef("--%s %s: out of range: want %s (%s)", f.Name, f.Value.String(), r.text(), r.what)
	})
	return err
}

// text is the range in words: "seconds > 0", "0 to 1", "tokens ≥ 0".
func (r flagRange) text() string {
	unit := r.unit
	if unit != "" {
		unit += " "
	}
	lo := "≥"
	if r.minOpen {
		lo = ">"
	}
	if math.IsInf(r.max, 1) {
		return fmt.Sprintf("%s%s %g", unit, lo, r.min)
	}
	return fmt.Sprintf("%s%g to %g", unit, r.min, r.max)
}
