package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/synth"
	"github.com/agentperf/agentperf/timing"
)

// Defaults of the Config fields that replay owns; DefaultConfig holds them
// together with the replay core's (package timing: the start ratios, the
// delay and idle caps, the default AgentX generation). The CLI's flags take their defaults from the same constants.
const (
	DefaultEndpoint       = "/v1/chat/completions"
	DefaultGracePeriod    = 30 * time.Second
	DefaultRequestTimeout = 6 * time.Hour
	DefaultConnectTimeout = 30 * time.Second
	// DefaultDynamoSessionTimeoutSeconds is the session timeout sent in
	// Dynamo's nvext.session_control.
	DefaultDynamoSessionTimeoutSeconds = 300
)

// DefaultConfig returns a Config holding every default: the replay
// semantics of the AgentX generation InferenceX runs today
// (timing.DefaultGeneration), the start ratios, caps, grace period and
// timeouts. Fill in what a run needs (URL, Models, Traces, Synth,
// Concurrency, BenchmarkDuration, Sink) and change what differs.
//
// Every field of a Config made by DefaultConfig means what it holds: a
// zero GracePeriod cancels in-flight requests at the deadline, zero start
// ratios start every lane at the start of its trace, a zero
// InterTurnDelayCap, RequestTimeout or ConnectTimeout is no cap or
// timeout, an empty Endpoint sends to URL itself.
//
// A Config not made by DefaultConfig (a literal, as written before
// DefaultConfig existed) keeps the older rules, so that it still means what
// it meant: a zero Endpoint, GracePeriod, InterTurnDelayCap,
// RequestTimeout or ConnectTimeout means the default, and so do both
// start ratios zero. Its zero Generation is v0.2.
func DefaultConfig() Config {
	g := defaultGeneration()
	return Config{
		Endpoint:          DefaultEndpoint,
		Generation:        g,
		LiveAssistant:     g.LiveAssistant,
		SystemIdleGapCap:  timing.DefaultSystemIdleCap,
		StartMinRatio:     timing.DefaultStartMinRatio,
		StartMaxRatio:     timing.DefaultStartMaxRatio,
		GracePeriod:       DefaultGracePeriod,
		InterTurnDelayCap: timing.DefaultInterTurnDelayCap,
		RequestTimeout:    DefaultRequestTimeout,
		ConnectTimeout:    DefaultConnectTimeout,

		fromDefaults: true,
	}
}

// defaultGeneration is timing.DefaultGeneration, which is always known.
func defaultGeneration() timing.Generation {
	g, err := timing.LookupGeneration(timing.DefaultGeneration)
	if err != nil {
		panic("replay: " + err.Error())
	}
	return g
}

// Config describes one replay. Start from DefaultConfig, which holds every
// default; Validate reports what is missing or inconsistent. Each field's
// comment gives its DefaultConfig value and, where a Config literal not
// made by DefaultConfig reads a zero value as a default, that rule.
type Config struct {
	// URL is the server's base URL, e.g. "http://localhost:8000". User
	// info (http://user:password@host) is sent as Basic auth (see
	// URLCredentials).
	URL string
	// Endpoint is appended to URL (DefaultConfig: DefaultEndpoint; in a
	// Config literal "" means DefaultEndpoint).
	Endpoint string
	// Models are the model names sent on the wire. A trace's main model (the
	// model of its first request) maps to Models[0]; other recorded models
	// map to Models[1:] in order of first appearance, wrapping (as aiperf
	// rewrites models; docs/replay.md).
	Models []string
	// APIKey is sent as a bearer token. It is never logged or exported.
	APIKey string

	// Traces is the corpus in source order.
	Traces []dataset.Trace
	// Synth builds the prompt of a turn.
	Synth *synth.Synthesizer

	// Generation is the AgentX generation replayed: its fields are the
	// replay mechanisms (DefaultConfig: timing.DefaultGeneration, v1.0; in
	// a Config literal the zero value means timing.V02).
	Generation timing.Generation
	// Chains are the switches of the generation's chain layout (the
	// pinned loader's AIPERF_DATASET_WEKA_* variables; nil:
	// dataset.DefaultChainOptions). See timing.SessionLayout.
	Chains *dataset.ChainOptions
	// TraceIdleGapCap is the trace idle gap cap: in v0.3 the recorded
	// timeline's start-to-start gaps are shortened to it (0 = no warp); in
	// v1.0 a tree with nothing in flight for that long has its pending
	// timers pulled in (0 = off). DefaultConfig leaves it 0, v1.0's
	// default; v0.3's is timing.DefaultV03IdleGapCap: set it with V03.
	TraceIdleGapCap time.Duration
	// SystemIdleGapCap (v1.0): when nothing is in flight anywhere, every
	// pending timer moves so the next request goes out at most this long
	// after the last response (0 = off; DefaultConfig:
	// timing.DefaultSystemIdleCap, which the scenario locks).
	SystemIdleGapCap time.Duration
	// WarmupRequestsPerLane (v1.0) is the cache warmup after the primers:
	// every lane replays its tree with no idle delay and one output token
	// until it has sent this many more requests (0 = none).
	WarmupRequestsPerLane int
	// AgenticCacheWarmupDuration (v1.0) is the time-bounded alternative
	// to WarmupRequestsPerLane (0 = none).
	AgenticCacheWarmupDuration time.Duration
	// BurstPhaseStarts (v1.0) sends every primer at once and starts each
	// lane's profiling on its own first request, instead of spreading them
	// on the recorded timeline.
	BurstPhaseStarts bool
	// DynamoSession, when set, adds Dynamo's nvext.session_control to every
	// request body (--use-dynamo-conv-aware-routing).
	DynamoSession *DynamoSession
	// DAGFailFast aborts the run on the first failed subagent request
	// (AIPERF_DAG_FAIL_FAST).
	DAGFailFast bool
	// AllowDatasetWrap lets v1.0 lanes outnumber the corpus's traces
	// without a cache-bust marker (with one, wrapping is always allowed).
	AllowDatasetWrap bool

	// Concurrency is the number of lanes (session trees; a tree may have
	// several requests in flight while its subagents run). In a sharded
	// run it is the global lane count: the shard plays its share.
	Concurrency int
	// Shard is the share of the lanes this run plays (index I of N:
	// the global lanes i with i mod N == I; docs/distributed.md). The zero
	// value plays every lane. Every lane keeps its global index (worker_id
	// lane_NNNN), and its seeded state depends only on the seed and that
	// index, so the shards of a run together play the unsharded run's
	// lanes. Records carry the shard.
	Shard timing.Shard
	// Coordinator, when set, joins the run to the other shards of a
	// sharded run: the warmup and profiling barriers, the profiling start
	// instant and its alignment, the stop (docs/distributed.md). Without
	// one, a shard runs on its own clock.
	Coordinator Coordinator
	// Seed drives start-turn sampling (and, through Synth, prompt bytes).
	Seed int64
	// StartMinRatio and StartMaxRatio bound each lane's start (the start
	// turn k_i, or the snapshot time t* in v1.0) as fractions of its trace
	// (DefaultConfig: timing.DefaultStartMinRatio and
	// timing.DefaultStartMaxRatio). In a Config literal both zero mean
	// those defaults; to start at 0, start from DefaultConfig.
	StartMinRatio, StartMaxRatio float64
	// BenchmarkDuration is the profiling duration; no new turn is issued
	// after it (required).
	BenchmarkDuration time.Duration
	// GracePeriod is how long in-flight requests may finish after the
	// duration or a cancellation before they are cancelled (DefaultConfig:
	// DefaultGracePeriod; 0 = none, they are cancelled at once; in a
	// Config literal 0 means DefaultGracePeriod and a negative value none).
	GracePeriod time.Duration
	// WarmupGracePeriod bounds the warmup phase (0 = unlimited).
	WarmupGracePeriod time.Duration
	// InterTurnDelayCap caps each v0.2 inter-turn delay (DefaultConfig:
	// timing.DefaultInterTurnDelayCap; 0 or negative = no cap; in a Config
	// literal 0 means timing.DefaultInterTurnDelayCap and only a negative
	// value is no cap).
	InterTurnDelayCap time.Duration

	// CacheBust selects where the per-session marker goes.
	CacheBust scenario.CacheBust
	// Streaming requests SSE responses.
	Streaming bool
	// IgnoreEOS sends "ignore_eos": true.
	IgnoreEOS bool
	// UseLegacyMaxTokens sends max_tokens instead of max_completion_tokens.
	UseLegacyMaxTokens bool
	// SynthesisMaxOSL caps the recorded output length of parent turns (0 = no cap).
	SynthesisMaxOSL int
	// ExtraInputs are merged into every request body, in order.
	ExtraInputs []ExtraInput
	// UseServerTokenCount takes ISL/OSL from the server's usage; a missing
	// usage then makes the request an error record.
	UseServerTokenCount bool
	// LiveAssistant threads the server's replies into later turns
	// (AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES).
	LiveAssistant bool

	// RequestTimeout bounds one request including its whole stream
	// (DefaultConfig: DefaultRequestTimeout). ConnectTimeout bounds
	// connecting (DefaultConfig: DefaultConnectTimeout). 0 is no timeout;
	// in a Config literal 0 means the default.
	RequestTimeout, ConnectTimeout time.Duration
	// Insecure skips TLS certificate verification.
	Insecure bool
	// Headers are extra HTTP headers sent with every request.
	Headers map[string]string
	// SessionHeaders adds session-affinity headers keyed by the session's
	// correlation id.
	SessionHeaders SessionHeaders

	// WarmupRetries is how many times a warmup request that failed with a
	// transient error (HTTP 429 or 5xx, a connection reset, a stream cut
	// short) is sent again before its failure counts (default
	// DefaultWarmupRetries; negative = never). WarmupRetryBackoff is the
	// pause before the first retry, doubled for each further one, with
	// jitter (default DefaultWarmupRetryBackoff). See docs/warmup-retries.md.
	WarmupRetries      int
	WarmupRetryBackoff time.Duration
	// LivenessInterval: while requests are in flight and none has
	// progressed for this long, a line says so, once per interval
	// (default DefaultLivenessInterval; negative = off).
	LivenessInterval time.Duration

	// FailedRequestThreshold aborts the run when the fraction of failed
	// profiling requests exceeds it (0 = disabled).
	FailedRequestThreshold float64
	// Classifier recognises context-overflow errors (nil = scenario.DefaultClassifier).
	Classifier *scenario.Classifier

	// Sink receives every record (warmup, profiling, errors, cancelled).
	Sink metrics.Sink
	// Overflows receives context-overflow records (nil = Sink).
	Overflows metrics.Sink

	// BenchmarkID identifies the run and keys the cache-bust markers
	// (default: a new UUID).
	BenchmarkID string
	// KillNow, when set, is the second interrupt: once it is closed, every
	// in-flight request is cancelled at once (the grace period is skipped)
	// and no new one is sent. Every request sent is still recorded
	// (cancelled where it had no response) and Run returns its Result
	// with Cancelled and Killed set, so the caller writes every artifact.
	KillNow <-chan struct{}

	// Progress, when set, is updated live for progress displays.
	Progress *Progress
	// Observer, when set, is told about phase changes.
	Observer Observer
	// Logf receives diagnostics (default: discard).
	Logf func(format string, args ...any)

	// fromDefaults marks a Config made by DefaultConfig: its zero values
	// are taken as they are (see DefaultConfig).
	fromDefaults bool
}

// ExtraInput is one key of Config.ExtraInputs, merged into the request body.
type ExtraInput struct {
	Key   string
	Value json.RawMessage
}

// ParseExtraInput parses "key:value" (value is JSON if it parses, else a
// string) or a JSON object (every key of it). Its error is a *FieldError
// for Config.ExtraInputs.
func ParseExtraInput(s string) ([]ExtraInput, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return nil, fieldErr("ExtraInputs", fmt.Errorf("%q: not a valid JSON object: %v", s, err))
		}
		out := make([]ExtraInput, 0, len(m))
		for _, k := range sortedKeys(m) {
			out = append(out, ExtraInput{Key: k, Value: m[k]})
		}
		return out, nil
	}
	k, v, ok := strings.Cut(s, ":")
	if !ok || k == "" {
		return nil, fieldErr("ExtraInputs", fmt.Errorf("%q: expected key:value or a JSON object", s))
	}
	raw := json.RawMessage(v)
	if !json.Valid(raw) {
		b, _ := json.Marshal(v)
		raw = b
	}
	return []ExtraInput{{Key: k, Value: raw}}, nil
}

// SessionHeaders selects the optional session-affinity headers, each
// carrying the conversation's correlation id for a router (docs/replay.md,
// "Requests on the wire").
type SessionHeaders struct {
	XSessionID bool // X-Session-ID
	Dynamo     bool // X-Dynamo-Session-ID
	SMG        bool // X-SMG-Routing-Key
}

// Progress holds live counters, updated atomically by Run.
type Progress struct {
	Sent          atomic.Int64
	InFlight      atomic.Int64
	WarmupTotal   atomic.Int64
	WarmupDone    atomic.Int64
	ProfilingDone atomic.Int64
	Errors        atomic.Int64
	Overflows     atomic.Int64
}

// Observer is told about phase changes. Calls come from the Run goroutine.
type Observer interface {
	WarmupStarted(requests int, at time.Time)
	ProfilingStarted(start, deadline time.Time)
	ProfilingEnded(at time.Time)
}

// CheckURL reports a problem with a server URL as Validate does (a
// *FieldError for Config.URL): it must be http(s)://host[:port].
func CheckURL(s string) error {
	if s == "" {
		return fieldErr("URL", errors.New("required"))
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fieldErr("URL", fmt.Errorf("%q must be http(s)://host[:port] (e.g. http://localhost:8000)", redactedURL(s)))
	}
	return nil
}

// Validate reports every problem with c, each a *FieldError naming the
// field (joined with errors.Join).
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fieldErr(field, fmt.Errorf(format, args...)))
	}
	if c.Chains != nil {
		if err := c.Chains.Validate(); err != nil {
			bad("Chains", "%v", err)
		}
	}
	if err := CheckURL(c.URL); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateCredentials(); err != nil {
		errs = append(errs, fieldErr("URL", err))
	}
	if err := validateHeaders(c.Headers); err != nil {
		errs = append(errs, fieldErr("Headers", err))
	}
	if len(c.Models) == 0 {
		bad("Models", "at least one model is required")
	}
	if c.fromDefaults && c.Generation.IsZero() {
		bad("Generation", "required: timing.LookupGeneration, or DefaultConfig's")
	}
	if len(c.Traces) == 0 {
		bad("Traces", "the corpus has no traces")
	}
	if c.Synth == nil {
		bad("Synth", "required")
	} else if c.LiveAssistant != c.Synth.Live() {
		bad("LiveAssistant", "%v, but the synthesizer was built with Live %v: build it with synth.Options{Live: %v}", c.LiveAssistant, c.Synth.Live(), c.LiveAssistant)
	}
	if c.Concurrency < 1 {
		bad("Concurrency", "must be at least 1, got %d", c.Concurrency)
	}
	if err := c.Shard.Validate(); err != nil {
		bad("Shard", "%d/%d: want index I of N shards with 0 ≤ I < N", c.Shard.Index, c.Shard.Count)
	} else if c.Shard.Count > 1 && c.Concurrency >= 1 && c.Shard.Index >= c.Concurrency {
		bad("Shard", "%d/%d has no lane: the run has %d lanes (Concurrency is the global lane count); use at most %d shards", c.Shard.Index, c.Shard.Count, c.Concurrency, c.Concurrency)
	}
	if c.BenchmarkDuration <= 0 {
		bad("BenchmarkDuration", "must be positive, got %v", c.BenchmarkDuration)
	}
	if c.FailedRequestThreshold < 0 || c.FailedRequestThreshold > 1 {
		bad("FailedRequestThreshold", "must be in (0, 1] (0 = off), got %g", c.FailedRequestThreshold)
	}
	if c.Sink == nil {
		bad("Sink", "required")
	}
	if c.WarmupRequestsPerLane < 0 {
		bad("WarmupRequestsPerLane", "must not be negative, got %d", c.WarmupRequestsPerLane)
	}
	if c.AgenticCacheWarmupDuration < 0 {
		bad("AgenticCacheWarmupDuration", "must not be negative, got %v", c.AgenticCacheWarmupDuration)
	}
	if c.WarmupRequestsPerLane > 0 && c.AgenticCacheWarmupDuration > 0 {
		bad("AgenticCacheWarmupDuration", "set together with Config.WarmupRequestsPerLane, its alternative (a duration or a count of cache warmup): set one")
	}
	if c.Generation.WrapNeedsConsent && (c.CacheBust == scenario.CacheBustNone || c.CacheBust == "") && !c.AllowDatasetWrap && c.Concurrency > len(c.Traces) {
		bad("Concurrency", "%d exceeds the corpus's %d traces: lanes would replay the same traces with byte-identical prompts; set Config.AllowDatasetWrap or a Config.CacheBust marker, or use fewer lanes", c.Concurrency, len(c.Traces))
	}
	return errors.Join(errs...)
}

// timingConfig is the replay core's configuration.
func (c *Config) timingConfig() timing.Config {
	t := timing.Config{
		Generation:    c.Generation,
		Lanes:         c.Concurrency,
		Seed:          c.Seed,
		StartMinRatio: c.StartMinRatio,
		StartMaxRatio: c.StartMaxRatio,
		Duration:      c.BenchmarkDuration,

		WarmupRequestsPerLane: c.WarmupRequestsPerLane,
		WarmupDuration:        c.AgenticCacheWarmupDuration,
		BurstPhaseStarts:      c.BurstPhaseStarts,
		Shard:                 c.Shard,
	}
	if c.Generation.RuntimeIdleCaps {
		t.SystemIdleCap = max(c.SystemIdleGapCap, 0)
		t.TraceIdleCap = max(c.TraceIdleGapCap, 0)
	}
	return t
}

// DynamoSession configures Dynamo's conversation-aware routing: every
// request carries nvext.session_control with the conversation's session
// id (the conversation id and its cache-bust marker, or its correlation
// id without a marker), the timeout, and "bind" on a session's first
// request.
type DynamoSession struct {
	// TimeoutSeconds is sent as the session timeout (the CLI's default is
	// DefaultDynamoSessionTimeoutSeconds).
	TimeoutSeconds int
}

// withDefaults returns c with the collaborators' defaults filled in (and,
// for a Config literal not made by DefaultConfig, the zero-value rules
// described there), normalised for the engine: a negative grace period or
// delay cap is 0, and a delay cap of 0 is no cap.
func (c *Config) withDefaults() Config {
	d := *c
	d.moveURLCredentials()
	if !d.fromDefaults {
		d.literalDefaults()
	}
	d.GracePeriod = max(d.GracePeriod, 0)
	d.InterTurnDelayCap = max(d.InterTurnDelayCap, 0)
	if d.Overflows == nil {
		d.Overflows = d.Sink
	}
	switch {
	case d.WarmupRetries == 0:
		d.WarmupRetries = DefaultWarmupRetries
	case d.WarmupRetries < 0:
		d.WarmupRetries = 0
	}
	if d.WarmupRetryBackoff <= 0 {
		d.WarmupRetryBackoff = DefaultWarmupRetryBackoff
	}
	if d.LivenessInterval == 0 {
		d.LivenessInterval = DefaultLivenessInterval
	}
	if d.Logf == nil {
		d.Logf = func(string, ...any) {}
	}
	if d.Progress == nil {
		d.Progress = new(Progress)
	}
	return d
}

// literalDefaults applies the zero-value rules of a Config literal (one
// not made by DefaultConfig), with the values DefaultConfig holds.
func (c *Config) literalDefaults() {
	def := DefaultConfig()
	if c.Endpoint == "" {
		c.Endpoint = def.Endpoint
	}
	switch {
	case c.GracePeriod == 0:
		c.GracePeriod = def.GracePeriod
	case c.GracePeriod < 0:
		c.GracePeriod = 0
	}
	switch {
	case c.InterTurnDelayCap == 0:
		c.InterTurnDelayCap = def.InterTurnDelayCap
	case c.InterTurnDelayCap < 0:
		c.InterTurnDelayCap = 0 // no cap
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = def.RequestTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = def.ConnectTimeout
	}
	if c.Generation.IsZero() {
		c.Generation = timing.V02
	}
	if c.StartMinRatio == 0 && c.StartMaxRatio == 0 {
		c.StartMinRatio, c.StartMaxRatio = def.StartMinRatio, def.StartMaxRatio
	}
	c.fromDefaults = true
}
