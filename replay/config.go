package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/timing"
)

// Defaults of the Config fields that replay owns; DefaultConfig holds them
// together with the replay core's (package timing: the start ratios, the
// delay and idle caps, the default AgentX generation) and the warmup
// retries' and liveness line's (DefaultWarmupRetries,
// DefaultWarmupRetryBackoff, DefaultLivenessInterval). The CLI's flags
// take their defaults from the same constants.
const (
	DefaultEndpoint       = "/v1/chat/completions"
	DefaultGracePeriod    = 30 * time.Second
	DefaultRequestTimeout = 6 * time.Hour
	DefaultConnectTimeout = 30 * time.Second
	// DefaultTCPUserTimeout is aiperf's default TCP_USER_TIMEOUT (30,000 ms).
	DefaultTCPUserTimeout = 30 * time.Second
	// MinTCPUserTimeout and MaxTCPUserTimeout bound Config.TCPUserTimeout
	// (aiperf's bounds for AIPERF_HTTP_TCP_USER_TIMEOUT: 1 to 1,000,000 ms).
	MinTCPUserTimeout = time.Millisecond
	MaxTCPUserTimeout = 1000 * time.Second
	// DefaultDynamoSessionTimeoutSeconds is the session timeout sent in
	// Dynamo's nvext.session_control.
	DefaultDynamoSessionTimeoutSeconds = 300
)

// DefaultConfig returns a Config holding every default, the one table of
// them: the replay semantics of the AgentX generation InferenceX runs
// today (timing.DefaultGeneration) with the pinned loader's chain layout
// switches, the start ratios, caps, grace period, timeouts, warmup
// retries and liveness interval. Fill in what a run needs (URL, Models,
// Traces, Synth, Concurrency, BenchmarkDuration, Sink) and change what
// differs.
//
// Every field means what it holds, whoever made the Config: Run never
// replaces a zero value by a default (see Config).
func DefaultConfig() Config {
	g := defaultGeneration()
	return Config{
		Endpoint:           DefaultEndpoint,
		Generation:         g,
		LiveAssistant:      g.LiveAssistant,
		Chains:             dataset.DefaultChainOptions(),
		SystemIdleGapCap:   timing.DefaultSystemIdleCap,
		StartMinRatio:      timing.DefaultStartMinRatio,
		StartMaxRatio:      timing.DefaultStartMaxRatio,
		GracePeriod:        DefaultGracePeriod,
		InterTurnDelayCap:  timing.DefaultInterTurnDelayCap,
		RequestTimeout:     DefaultRequestTimeout,
		ConnectTimeout:     DefaultConnectTimeout,
		TCPUserTimeout:     DefaultTCPUserTimeout,
		WarmupRetries:      DefaultWarmupRetries,
		WarmupRetryBackoff: DefaultWarmupRetryBackoff,
		ServerRestartWait:  DefaultServerRestartWait,
		LivenessInterval:   DefaultLivenessInterval,
		DynamoSession:      DynamoSession{TimeoutSeconds: DefaultDynamoSessionTimeoutSeconds},
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
// default; Validate reports what is missing or inconsistent.
//
// Every field means what it holds: Run never replaces a zero value by a
// default, so a Config written as a literal gets zero, not the default,
// for every field it leaves out (its zero Generation is refused). Each
// field's comment gives its DefaultConfig value and what zero means (a
// zero GracePeriod cancels the requests in flight at the deadline, zero
// start ratios start every lane at the start of its trace, a zero
// RequestTimeout is no timeout, …). The collaborators a run may go
// without mean none when nil (Classifier, Progress, Observer, Logf,
// Coordinator, KillNow); two empty values stand for
// something Run makes: a nil Overflows is Sink, an empty BenchmarkID a
// new id.
//
// Earlier versions read a zero Endpoint, GracePeriod, InterTurnDelayCap,
// RequestTimeout or ConnectTimeout, and both start ratios zero, of a
// Config not made by DefaultConfig as the default, and its zero
// Generation as v0.2; of any Config, a zero WarmupRetries,
// WarmupRetryBackoff or LivenessInterval as the default (and a nil
// Classifier as the scenario preset's). A Config that relied on that now
// starts from DefaultConfig (and sets Classifier).
type Config struct {
	// URL is the server's base URL, e.g. "http://localhost:8000". User
	// info (http://user:password@host) is sent as Basic auth (see
	// URLCredentials).
	URL string
	// Endpoint is appended to URL (DefaultConfig: DefaultEndpoint; "":
	// URL itself).
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
	Synth *prompttext.Synthesizer

	// Generation is the AgentX generation replayed: its fields are the
	// replay mechanisms (DefaultConfig: timing.DefaultGeneration, v1.0;
	// timing.LookupGeneration gives the others; required).
	Generation timing.Generation
	// Chains are the switches of the generation's chain layout (the
	// pinned loader's AIPERF_DATASET_WEKA_* variables; DefaultConfig:
	// dataset.DefaultChainOptions, the loader's; every value taken as it
	// is, so the zero value splits nothing). See timing.SessionLayout.
	Chains dataset.ChainOptions
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
	// DynamoSession, when Enabled, adds Dynamo's nvext.session_control to
	// every request body (--use-dynamo-conv-aware-routing; DefaultConfig:
	// off, with the timeout DefaultDynamoSessionTimeoutSeconds).
	DynamoSession DynamoSession
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
	// turn k_i, or the snapshot time t* in v1.0) as fractions of its trace,
	// 0 ≤ StartMinRatio ≤ StartMaxRatio ≤ 1 (DefaultConfig:
	// timing.DefaultStartMinRatio and timing.DefaultStartMaxRatio; both 0:
	// every lane starts at the start of its trace).
	StartMinRatio, StartMaxRatio float64
	// BenchmarkDuration is the profiling duration; no new turn is issued
	// after it (required).
	BenchmarkDuration time.Duration
	// GracePeriod is how long in-flight requests may finish after the
	// duration or a cancellation before they are cancelled (DefaultConfig:
	// DefaultGracePeriod; 0 or negative = none, they are cancelled at
	// once).
	GracePeriod time.Duration
	// WarmupGracePeriod bounds the warmup phase (0 = unlimited).
	WarmupGracePeriod time.Duration
	// InterTurnDelayCap caps each v0.2 inter-turn delay (DefaultConfig:
	// timing.DefaultInterTurnDelayCap; 0 or negative = no cap).
	InterTurnDelayCap time.Duration

	// CacheBust gives every session tree a cache-bust marker and says
	// where it goes; the zero value sends none.
	CacheBust CacheBust
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
	// UseServerTokenCount says ISL/OSL are to come from the server's
	// usage (the only source the engine has: it counts no tokens itself).
	// A successful profiling request without usage then stays successful
	// without ISL/OSL, as in the pinned aiperf, and is counted
	// (Result.MissingUsage) and logged at the first.
	UseServerTokenCount bool
	// LiveAssistant threads the server's replies into later turns
	// (AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES).
	LiveAssistant bool

	// RequestTimeout bounds one request including its whole stream
	// (DefaultConfig: DefaultRequestTimeout): it fails as a timeout after
	// between RequestTimeout less 1/64 of it (a second at most) and
	// RequestTimeout, since a connection's deadline is moved at most once
	// a second. ConnectTimeout bounds connecting (DefaultConfig:
	// DefaultConnectTimeout). 0 is no timeout.
	RequestTimeout, ConnectTimeout time.Duration
	// TCPUserTimeout is set as the TCP_USER_TIMEOUT of every connection
	// the client dials (AIPERF_HTTP_TCP_USER_TIMEOUT): on Linux the kernel
	// drops a connection whose sent data stays unacknowledged (or whose
	// keep-alive probes go unanswered) this long, so a dead peer fails the
	// request instead of hanging it. It is applied in whole milliseconds,
	// between MinTCPUserTimeout and MaxTCPUserTimeout (DefaultConfig:
	// DefaultTCPUserTimeout, aiperf's). 0 leaves the kernel's default. It
	// has no effect on other OSes (TCPUserTimeoutApplies).
	TCPUserTimeout time.Duration
	// Insecure skips TLS certificate verification.
	Insecure bool
	// Headers are extra HTTP headers sent with every request.
	Headers map[string]string
	// SessionHeaders adds session-affinity headers keyed by the session's
	// correlation id.
	SessionHeaders SessionHeaders

	// WarmupRetries is how many times a warmup request that failed with a
	// transient error (HTTP 429 or 5xx, a connection reset, a stream cut
	// short) is sent again before its failure counts (DefaultConfig:
	// DefaultWarmupRetries; 0 or negative = never). WarmupRetryBackoff is
	// the pause before the first retry, doubled for each further one, with
	// jitter (DefaultConfig: DefaultWarmupRetryBackoff; 0 or negative = no
	// pause). See docs/warmup-retries.md.
	WarmupRetries      int
	WarmupRetryBackoff time.Duration
	// ServerRestartWait is how long a request, warmup or profiling, is
	// sent again while the server says it is restarting (HTTP 503
	// "Loading model", or a refused connection after it had answered),
	// counted from its first try; the wait is the server's time in the
	// request's latency (DefaultConfig: DefaultServerRestartWait; 0 or
	// negative = the first such answer is the request's failure). See
	// docs/server-restarts.md.
	ServerRestartWait time.Duration
	// LivenessInterval: while requests are in flight and none has
	// progressed for this long, a line says so, once per interval
	// (DefaultConfig: DefaultLivenessInterval; 0 or negative = off).
	LivenessInterval time.Duration

	// Threshold, when set, judges the profiling requests and may abort
	// the run (--failed-request-threshold: scenario.NewThreshold, which
	// package run builds from Spec.FailedRequestThreshold and the
	// run's Progress). nil: no threshold. A Threshold serves one run.
	Threshold Threshold
	// Classifier recognises context-overflow errors. Nil recognises none:
	// every error response is an error record. scenario.DefaultClassifier
	// is the preset's (run.NewSpec sets it).
	Classifier Classifier

	// Sink receives every record (warmup, profiling, errors, cancelled).
	Sink metrics.Sink
	// Overflows receives context-overflow records (nil: Sink does).
	Overflows metrics.Sink

	// BenchmarkID identifies the run and keys the cache-bust markers ("":
	// Run makes a new UUID).
	BenchmarkID string
	// KillNow, when set, is the second interrupt: once it is closed, every
	// in-flight request is cancelled at once (the grace period is skipped)
	// and no new one is sent. Every request sent is still recorded
	// (cancelled where it had no response) and Run returns its Result
	// with Cancelled and Killed set, so the caller writes every artifact.
	KillNow <-chan struct{}

	// Progress, when set, is the run's live figures (its outcome tally),
	// for progress displays; a Progress serves one run.
	Progress *Progress
	// Observer, when set, is told about phase changes.
	Observer Observer
	// Logf, when set, receives diagnostics.
	Logf func(format string, args ...any)
}

// Classifier recognises context-overflow errors (docs/context-overflow.md):
// IsOverflow reports whether the body of an error response, or the message
// of an error that has no body, says the prompt did not fit the server's
// context window. Run calls it from many goroutines at once.
// *scenario.Classifier is one (scenario.DefaultClassifier,
// scenario.ClassifierFromEnv).
type Classifier interface {
	IsOverflow(body []byte) bool
}

// noOverflow is the Classifier of a Config without one: it recognises
// nothing.
type noOverflow struct{}

func (noOverflow) IsOverflow([]byte) bool { return false }

// CacheBust makes each session tree's prompts unique to the run with a
// cache-bust marker (docs/replay.md, "Cache-bust markers"), so a server's
// prefix cache cannot serve them from another run's or another tree's
// blocks. The zero value sends no marker.
type CacheBust struct {
	// Placement is where the marker goes in a turn's messages.
	Placement prompttext.MarkerPlacement
	// Marker returns the marker text of one tree, from the run's
	// BenchmarkID, the tree's recycle pass (timing.Send.RecyclePass), its
	// lane and its trace id; under a generation with StreamScope, a child
	// spawned during the run gets the marker of pass 0, lane 0 and its
	// own conversation id. Nil sends no marker. scenario.Marker is the
	// preset's.
	Marker func(benchmarkID string, recyclePass, lane int, traceID string) string
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

// Progress is a run's live figures (Config.Progress): the run's outcome
// tally, which the engine updates as it sends each request and once per
// record, and the number of warmup requests planned. The tally is the
// run's one count of its requests: Result.Accounting is read from it, and
// so are the live view's counts (metrics.CollectorOptions.Tally) and the
// failed-request threshold's (scenario.NewThreshold).
//
// Its figures are read with Counts (Sent: requests sent, every attempt;
// InFlight: those whose exchange is not over; WarmupDone: warmup requests
// done, whatever their outcome; ProfilingDone: profiling requests done,
// cancelled ones aside; Errors: failed records of both phases; Overflows:
// context overflows), the meanings of the atomic fields Progress had
// before; they are read-only now because they are the run's accounting,
// which only the engine updates.
type Progress struct {
	metrics.Tally
	warmupTotal atomic.Int64
	streamed    atomic.Int64
}

// StreamedTokens returns the output tokens streamed so far, by every
// request of the run whatever its phase, counted as they arrive: each
// content (or reasoning) chunk counts one when it is read, and when a
// request ends with the server's usage, the tokens its chunks did not
// account for (a server that sends several tokens per chunk) are added
// then. Over a run it totals the streamed requests' completion tokens; a
// live view takes its output token rate from its differences. 0 without
// streaming.
func (p *Progress) StreamedTokens() int64 { return p.streamed.Load() }

// WarmupTotal returns the number of warmup requests planned (0 until the
// warmup starts).
func (p *Progress) WarmupTotal() int { return int(p.warmupTotal.Load()) }

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
		return fieldErr("URL", errors.New("required: the server's base URL, e.g. http://localhost:8000"))
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fieldErr("URL", fmt.Errorf("%q must be http(s)://host[:port] (e.g. http://localhost:8000)", redactedURL(s)))
	}
	return nil
}

// Validate reports every problem with c, each a *FieldError naming the
// field (joined with errors.Join). It is the one check of a Config: Run
// calls it, and a caller that wants to check its settings before it has
// a corpus calls ValidateSettings, which runs the same checks but those
// of what a run is given besides its settings.
func (c *Config) Validate() error { return c.validate(true) }

// ValidateSettings reports the problems Validate finds in c's settings:
// every check but those of the corpus, the synthesizer and the sink
// (Traces, Synth, Sink) and of how the settings fit them (LiveAssistant
// against the synthesizer, Concurrency against the corpus's size).
// Package run checks a run's settings with it before it loads the
// corpus.
func (c *Config) ValidateSettings() error { return c.validate(false) }

// validate is Validate (inputs set) or ValidateSettings.
func (c *Config) validate(inputs bool) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fieldErr(field, fmt.Errorf(format, args...)))
	}
	if err := c.Chains.Validate(); err != nil {
		bad("Chains", "%v", err)
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
	if c.DynamoSession.Enabled && c.DynamoSession.TimeoutSeconds <= 0 {
		bad("DynamoSession.TimeoutSeconds", "%d: must be positive (seconds)", c.DynamoSession.TimeoutSeconds)
	}
	if len(c.Models) == 0 {
		bad("Models", "required: the name of the model the server serves (at least one)")
	}
	if c.Generation.IsZero() {
		bad("Generation", "required: start from DefaultConfig, which holds every default (AgentX %s), or set timing.LookupGeneration's", timing.DefaultGeneration)
	}
	if inputs && len(c.Traces) == 0 {
		bad("Traces", "the corpus has no traces")
	}
	switch {
	case !inputs:
	case c.Synth == nil:
		bad("Synth", "required")
	case c.LiveAssistant != c.Synth.Live():
		bad("LiveAssistant", "%v, but the synthesizer was built with Live %v: build it with prompttext.Options{Live: %v}", c.LiveAssistant, c.Synth.Live(), c.LiveAssistant)
	}
	if c.Concurrency < 1 {
		bad("Concurrency", "must be at least 1, got %d", c.Concurrency)
	}
	if err := c.Shard.Validate(); err != nil {
		bad("Shard", "%d/%d: want index I of N shards with 0 ≤ I < N", c.Shard.Index, c.Shard.Count)
	} else if c.Shard.Count > 1 && c.Concurrency >= 1 && c.Shard.Index >= c.Concurrency {
		bad("Shard", "%d/%d has no lane: the run has %d lanes (Concurrency is the global lane count); use at most %d shards", c.Shard.Index, c.Shard.Count, c.Concurrency, c.Concurrency)
	}
	if !(c.StartMinRatio >= 0 && c.StartMinRatio <= c.StartMaxRatio && c.StartMaxRatio <= 1) {
		bad("StartMinRatio", "%g / Config.StartMaxRatio %g: need 0 ≤ min ≤ max ≤ 1", c.StartMinRatio, c.StartMaxRatio)
	}
	switch {
	case c.BenchmarkDuration == 0:
		bad("BenchmarkDuration", "required (the length of the profiling phase)")
	case c.BenchmarkDuration < 0:
		bad("BenchmarkDuration", "must be positive, got %v", c.BenchmarkDuration)
	}
	if inputs && c.Sink == nil {
		bad("Sink", "required")
	}
	if p := c.Progress; p != nil && (p.Counts().Sent > 0 || p.WarmupTotal() > 0) {
		bad("Progress", "already counts %d requests of another run: give each run a new Progress (it is the run's request accounting)", p.Counts().Sent)
	}
	if t := c.TCPUserTimeout; t != 0 && (t < MinTCPUserTimeout || t > MaxTCPUserTimeout) {
		bad("TCPUserTimeout", "%v is outside [%v, %v] (0 leaves the kernel's default)", t, MinTCPUserTimeout, MaxTCPUserTimeout)
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
	if inputs && c.Generation.WrapNeedsConsent && c.CacheBust.Marker == nil && !c.AllowDatasetWrap && c.Concurrency > len(c.Traces) {
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
	// Enabled turns the session control on.
	Enabled bool
	// TimeoutSeconds is sent as the session timeout (positive when
	// Enabled).
	TimeoutSeconds int
}

// runConfig is a Config as Run normalised it, once: the only form the
// engine reads. Run validates the Config, then normalises it here, so no
// other code fills defaults or guards against values Validate allows.
type runConfig struct {
	Config
}

// normalize returns c as the engine reads it: the URL's user info moved
// into an Authorization header (Headers is copied, never changed in
// place); a negative GracePeriod, WarmupRetries or WarmupRetryBackoff as
// 0 (their "none"); the collaborators c may leave nil made (Overflows: the
// Sink; Classifier: one that recognises nothing; Logf: a discard;
// Progress: counters nobody reads) and an empty BenchmarkID made (a new
// UUID). Nothing that DefaultConfig holds is filled in.
func (c *Config) normalize() *runConfig {
	r := &runConfig{Config: *c}
	r.moveURLCredentials()
	r.GracePeriod = max(r.GracePeriod, 0)
	r.WarmupRetries = max(r.WarmupRetries, 0)
	r.WarmupRetryBackoff = max(r.WarmupRetryBackoff, 0)
	r.ServerRestartWait = max(r.ServerRestartWait, 0)
	if r.Overflows == nil {
		r.Overflows = r.Sink
	}
	if r.Classifier == nil {
		r.Classifier = noOverflow{}
	}
	if r.Logf == nil {
		r.Logf = func(string, ...any) {}
	}
	if r.Progress == nil {
		r.Progress = new(Progress)
	}
	if r.BenchmarkID == "" {
		r.BenchmarkID = uuid.NewString()
	}
	return r
}
