package run

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// envHandling says what agentperf does with one AIPERF_* variable.
type envHandling int

const (
	envHonoured envHandling = iota // read and acted on
	envAccepted                    // accepted; nothing to do in agentperf (reason given)
	envRejected                    // understood but not supported unless at its default
)

type envVar struct {
	handling envHandling
	// why explains accepted and rejected variables.
	why string
	// isDefault reports whether a rejected variable's value is its harmless
	// default (then it is accepted).
	isDefault func(v string) bool
}

func falsy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "no", "off":
		return true
	}
	return false
}

func truthy(v string) bool { return !falsy(v) }

// LiveAssistantFromEnv reads AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES
// as a run reads it: set when not empty, true unless it is 0, false, no
// or off (in any case). Every command that shows or sends prompts reads
// it through here, so they agree on the text.
func LiveAssistantFromEnv(getenv func(string) string) (live, set bool) {
	v := getenv(envLiveAssistant)
	return truthy(v), v != ""
}

// knownEnv lists the AIPERF_* variables InferenceX and aiperf users set.
var knownEnv = map[string]envVar{
	"AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES":        {handling: envHonoured},
	"AIPERF_DATASET_MMAP_CACHE_DIR":                       {handling: envHonoured},
	"AIPERF_DATASET_MMAP_CACHE_ENABLED":                   {handling: envHonoured},
	"AIPERF_DATASET_CONFIGURATION_TIMEOUT":                {handling: envHonoured},
	"AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT":            {handling: envHonoured},
	"AIPERF_SERVER_METRICS_URLS":                          {handling: envHonoured},
	"AIPERF_SERVER_METRICS_COLLECTION_INTERVAL":           {handling: envHonoured},
	"AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID":        {handling: envHonoured},
	"AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID": {handling: envHonoured},
	"AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID":   {handling: envHonoured},
	"AIPERF_AGENTX_CONTEXT_OVERFLOW_SUBSTRINGS":           {handling: envHonoured},
	"AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT":           {handling: envHonoured},
	"AIPERF_REQUIRED_SERVER_METRIC_PREFIX":                {handling: envHonoured},
	"AIPERF_UNSAFE_OVERRIDE":                              {handling: envHonoured},
	"AIPERF_UI_REALTIME_METRICS_ENABLED":                  {handling: envAccepted, why: "the live view is always on"},
	"AIPERF_HTTP_CONNECTION_LIMIT":                        {handling: envAccepted, why: "agentperf keeps one keep-alive connection per lane"},
	"AIPERF_HTTP_KEEPALIVE_TIMEOUT":                       {handling: envAccepted, why: "idle keep-alive connections are kept 5 minutes and re-dialled on reset"},
	"AIPERF_HTTP_TCP_USER_TIMEOUT":                        {handling: envHonoured},
	"AIPERF_DATASET_WEKA_PARALLEL_WORKERS":                {handling: envAccepted, why: "agentperf builds prompts lazily; there is no parallel reconstruction step"},
	"AIPERF_DATASET_WEKA_PARALLEL_THRESHOLD":              {handling: envAccepted, why: "agentperf builds prompts lazily; there is no parallel reconstruction step"},
	"AIPERF_DATASET_MMAP_PREFAULT":                        {handling: envAccepted, why: "the trace cache is small and paged in on demand"},
	"AIPERF_DRAIN_TIMEOUT_SECONDS":                        {handling: envAccepted, why: "read by InferenceX's multi-node wrapper, not by the load generator"},
	"AIPERF_DRAIN_POLL_SECONDS":                           {handling: envAccepted, why: "read by InferenceX's multi-node wrapper, not by the load generator"},
	"AIPERF_FAILED_REQUEST_THRESHOLD":                     {handling: envAccepted, why: "read by InferenceX's post-run validator; agentperf uses --failed-request-threshold"},
	"AIPERF_LIVE_FAILED_REQUEST_THRESHOLD":                {handling: envAccepted, why: "read by InferenceX's launcher; agentperf uses --failed-request-threshold"},
	"AIPERF_WARMUP_REQUESTS_PER_LANE":                     {handling: envAccepted, why: "read by InferenceX's launcher to build --warmup-requests-per-lane"},
	"AIPERF_TRACE_IDLE_GAP_CAP_SECONDS":                   {handling: envAccepted, why: "read by InferenceX's launcher to build --trace-idle-gap-cap-seconds"},
	"AIPERF_EXTRA_INPUTS":                                 {handling: envAccepted, why: "read by InferenceX's launcher to build --extra-inputs"},
	"AIPERF_EXPERIMENTAL_FAST":                            {handling: envAccepted, why: "read by InferenceX's launcher"},
	"AIPERF_SERVER_URL":                                   {handling: envAccepted, why: "read by InferenceX's launcher to build --url"},
	"AIPERF_PYTHON_VERSION":                               {handling: envAccepted, why: "read by InferenceX's installer"},
	"AIPERF_USE_DYNAMO_CONV_AWARE_ROUTING":                {handling: envAccepted, why: "read by InferenceX's launcher"},
	"AIPERF_DYNAMO_SESSION_TIMEOUT_SECONDS":               {handling: envAccepted, why: "read by InferenceX's launcher"},
	"AIPERF_DATASET_WEKA_TOOL_SHAPED_MESSAGES": {handling: envRejected, isDefault: falsy,
		why: "tool-shaped messages are not supported yet; tool results are sent as user messages"},
	"AIPERF_DAG_FAIL_FAST":                       {handling: envHonoured},
	"AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS": {handling: envHonoured},
	"AIPERF_DATASET_WEKA_SEAM_MAX_GAP_SECONDS":   {handling: envHonoured},
	"AIPERF_DATASET_WEKA_SEAM_MIN_OVERLAP_RATIO": {handling: envHonoured},
	"AIPERF_DATASET_WEKA_AUX_MAX_REQUESTS":       {handling: envHonoured},
	"AIPERF_DATASET_WEKA_AUX_ISL_RATIO":          {handling: envHonoured},
	"AIPERF_DATASET_WEKA_AUX_ISL_FLOOR":          {handling: envHonoured},
	"AIPERF_DATASET_WEKA_AUX_CROSS_MODEL":        {handling: envHonoured},
	"AIPERF_DATASET_WEKA_AUX_REDUCTION_OSL_MAX":  {handling: envHonoured},
	"AIPERF_DATASET_WEKA_AUX_REDUCTION_RATIO":    {handling: envHonoured},
	"AIPERF_DATASET_WEKA_WORKER_GROUP_MIN":       {handling: envHonoured},
	"AIPERF_TIMING_CANCEL_DRAIN_TIMEOUT":         {handling: envAccepted, why: "cancellation drains for --benchmark-grace-period"},
	"AIPERF_AGENTX_RECYCLE_GUARD_MAX_WINDOW":     {handling: envAccepted, why: "the scheduler recycles a lane exactly once per session by construction"},
}

// envLiveAssistant switches live assistant replies (v0.2's mode).
const envLiveAssistant = "AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES"

// Environment is what the AIPERF_* variables (aiperf's names, so that an
// InferenceX runner's settings apply unchanged) set in a run. Apply puts
// it into a Spec.
type Environment struct {
	// LiveAssistant is AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES, when
	// LiveAssistantSet.
	LiveAssistant, LiveAssistantSet bool
	// OpenTimeout bounds opening the corpus
	// (AIPERF_DATASET_CONFIGURATION_TIMEOUT, or the shorter
	// AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT).
	OpenTimeout time.Duration
	// ServerMetricsURLs are AIPERF_SERVER_METRICS_URLS.
	ServerMetricsURLs []string
	// ScrapeInterval is AIPERF_SERVER_METRICS_COLLECTION_INTERVAL.
	ScrapeInterval time.Duration
	// SessionHeaders are the AIPERF_HTTP_*_FROM_CORRELATION_ID switches.
	SessionHeaders replay.SessionHeaders
	// OverflowRateLimit is AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT.
	OverflowRateLimit scenario.Opt[float64]
	// RequiredPrefix is AIPERF_REQUIRED_SERVER_METRIC_PREFIX.
	RequiredPrefix string
	// UnsafeOverride is AIPERF_UNSAFE_OVERRIDE.
	UnsafeOverride bool
	// DAGFailFast is AIPERF_DAG_FAIL_FAST.
	DAGFailFast bool
	// TCPUserTimeout is AIPERF_HTTP_TCP_USER_TIMEOUT (milliseconds in the
	// variable), when TCPUserTimeoutSet: the TCP_USER_TIMEOUT of the
	// client's sockets (replay.Config.TCPUserTimeout; Linux only).
	TCPUserTimeout    time.Duration
	TCPUserTimeoutSet bool
	// Chains are the switches of v1.0's session layout (the
	// AIPERF_DATASET_WEKA_* variables of ChainOptionsFromEnv), when
	// ChainsSet (one of them is set).
	Chains    dataset.ChainOptions
	ChainsSet bool
	// Notes are the accepted-but-inert and unknown variables, for the log.
	Notes []string
}

// ReadEnvironment validates the AIPERF_* environment. Unknown AIPERF_*
// variables are reported as notes (the environment is ambient); rejected
// ones are an *InputError.
func ReadEnvironment(environ []string, getenv func(string) string) (Environment, error) {
	var s Environment
	var errs []string
	var names []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AIPERF_") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		v := getenv(k)
		ev, ok := knownEnv[k]
		switch {
		case !ok:
			s.Notes = append(s.Notes, fmt.Sprintf("%s is not an agentperf setting and has no effect", k))
		case ev.handling == envAccepted:
			s.Notes = append(s.Notes, fmt.Sprintf("%s accepted, no effect: %s", k, ev.why))
		case ev.handling == envRejected && !ev.isDefault(v):
			errs = append(errs, fmt.Sprintf("%s=%s: %s", k, v, ev.why))
		}
	}
	s.LiveAssistant, s.LiveAssistantSet = LiveAssistantFromEnv(getenv)
	parseSecs := func(name string) time.Duration {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			errs = append(errs, fmt.Sprintf("%s=%q: expected a positive number of seconds", name, v))
			return 0
		}
		return time.Duration(f * float64(time.Second))
	}
	s.OpenTimeout = parseSecs("AIPERF_DATASET_CONFIGURATION_TIMEOUT")
	if t := parseSecs("AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT"); t > 0 && (s.OpenTimeout == 0 || t < s.OpenTimeout) {
		s.OpenTimeout = t
	}
	if iv, err := servermetrics.IntervalFrom(getenv); err != nil {
		errs = append(errs, err.Error())
	} else {
		s.ScrapeInterval = iv
	}
	if v := getenv("AIPERF_SERVER_METRICS_URLS"); v != "" {
		for _, u := range strings.Split(v, ",") {
			if strings.TrimSpace(u) == "" || strings.ContainsAny(u, " \t") {
				errs = append(errs, fmt.Sprintf("AIPERF_SERVER_METRICS_URLS=%q: empty entries and whitespace are not allowed (comma-separated URLs)", v))
				break
			}
			s.ServerMetricsURLs = append(s.ServerMetricsURLs, u)
		}
	}
	s.SessionHeaders = replay.SessionHeaders{
		XSessionID: truthy(getenv("AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID")),
		Dynamo:     truthy(getenv("AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID")),
		SMG:        truthy(getenv("AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID")),
	}
	if lim, err := scenario.OverflowRateLimitFromEnv(getenv); err != nil {
		errs = append(errs, err.Error())
	} else {
		s.OverflowRateLimit = lim
	}
	s.RequiredPrefix = getenv("AIPERF_REQUIRED_SERVER_METRIC_PREFIX")
	s.UnsafeOverride = truthy(getenv("AIPERF_UNSAFE_OVERRIDE"))
	s.DAGFailFast = truthy(getenv("AIPERF_DAG_FAIL_FAST"))
	if d, set, err := TCPUserTimeoutFromEnv(getenv); err != nil {
		errs = append(errs, err.Error())
	} else {
		s.TCPUserTimeout, s.TCPUserTimeoutSet = d, set
	}
	s.Chains, errs = chainOptionsFromEnv(getenv, errs)
	for _, k := range chainEnvNames {
		if getenv(chainEnvPrefix+k) != "" {
			s.ChainsSet = true
		}
	}
	if len(errs) > 0 {
		return s, &InputError{Err: fmt.Errorf("environment:\n  %s", strings.Join(errs, "\n  "))}
	}
	return s, nil
}

// Apply puts the environment's settings into s: live assistant replies
// (when set), the corpus open timeout, the extra scrape URLs and interval,
// the session headers, the overflow-rate limit, the required metric
// prefix, DAG fail-fast, the TCP user timeout (when set), and the notes.
func (e Environment) Apply(s *Spec) {
	if e.LiveAssistantSet {
		s.Replay.LiveAssistant = e.LiveAssistant
	}
	if e.OpenTimeout > 0 {
		s.Corpus.OpenTimeout = e.OpenTimeout
	}
	s.ServerMetrics.URLs = append(s.ServerMetrics.URLs, e.ServerMetricsURLs...)
	if e.ScrapeInterval > 0 {
		s.ServerMetrics.Interval = e.ScrapeInterval
	}
	if e.RequiredPrefix != "" {
		s.ServerMetrics.RequiredPrefix = e.RequiredPrefix
	}
	s.Replay.SessionHeaders = e.SessionHeaders
	if e.OverflowRateLimit.Set {
		s.OverflowRateLimit = e.OverflowRateLimit
	}
	s.Replay.DAGFailFast = s.Replay.DAGFailFast || e.DAGFailFast
	if e.TCPUserTimeoutSet {
		s.Replay.TCPUserTimeout = e.TCPUserTimeout
	}
	if e.ChainsSet {
		s.Replay.Chains = e.Chains
	}
	s.UnsafeOverride = s.UnsafeOverride || e.UnsafeOverride
	s.Notes = append(append([]string(nil), e.Notes...), s.Notes...) // the environment first
}

// EnvTCPUserTimeout is the variable that sets the client's
// TCP_USER_TIMEOUT, in milliseconds (aiperf's name and unit).
const EnvTCPUserTimeout = "AIPERF_HTTP_TCP_USER_TIMEOUT"

// TCPUserTimeoutFromEnv reads AIPERF_HTTP_TCP_USER_TIMEOUT: a whole number
// of milliseconds from 1 to 1,000,000 (aiperf's bounds). set is false when
// the variable is unset or empty; anything else that is not such a number
// is an error naming the variable.
func TCPUserTimeoutFromEnv(getenv func(string) string) (d time.Duration, set bool, err error) {
	v := strings.TrimSpace(getenv(EnvTCPUserTimeout))
	if v == "" {
		return 0, false, nil
	}
	lo, hi := replay.MinTCPUserTimeout.Milliseconds(), replay.MaxTCPUserTimeout.Milliseconds()
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil || n < lo || n > hi {
		return 0, false, fmt.Errorf("%s=%q: expected a whole number of milliseconds from %d to %d (e.g. 900000 for 15 minutes)", EnvTCPUserTimeout, v, lo, hi)
	}
	return time.Duration(n) * time.Millisecond, true, nil
}

// chainEnvPrefix and chainEnvNames are the chain layout's variables.
const chainEnvPrefix = "AIPERF_DATASET_WEKA_"

var chainEnvNames = []string{"SPLIT_FLATTENED_AGENTS", "SEAM_MAX_GAP_SECONDS", "SEAM_MIN_OVERLAP_RATIO", "AUX_MAX_REQUESTS",
	"AUX_ISL_RATIO", "AUX_ISL_FLOOR", "AUX_CROSS_MODEL", "AUX_REDUCTION_OSL_MAX", "AUX_REDUCTION_RATIO", "WORKER_GROUP_MIN"}

// ChainOptionsFromEnv reads the AIPERF_DATASET_WEKA_* switches of v1.0's
// session layout over the pinned loader's defaults (unset variables keep
// them); a malformed or out-of-range value is an InputError naming it.
func ChainOptionsFromEnv(getenv func(string) string) (dataset.ChainOptions, error) {
	o, errs := chainOptionsFromEnv(getenv, nil)
	if len(errs) > 0 {
		return o, &InputError{Err: fmt.Errorf("environment:\n  %s", strings.Join(errs, "\n  "))}
	}
	return o, nil
}

// chainOptionsFromEnv reads the AIPERF_DATASET_WEKA_* switches of v1.0's
// session layout over the pinned loader's defaults, appending a message
// per malformed or out-of-range value to errs.
func chainOptionsFromEnv(getenv func(string) string, errs []string) (dataset.ChainOptions, []string) {
	o := dataset.DefaultChainOptions()
	const pre = chainEnvPrefix
	boolean := func(name string, dst *bool) {
		v := strings.TrimSpace(getenv(pre + name))
		if v == "" {
			return
		}
		switch strings.ToLower(v) {
		case "1", "true", "yes", "on":
			*dst = true
		case "0", "false", "no", "off":
			*dst = false
		default:
			errs = append(errs, fmt.Sprintf("%s%s=%q: expected true or false", pre, name, v))
		}
	}
	number := func(name string, dst *float64, lo, hi float64) {
		v := strings.TrimSpace(getenv(pre + name))
		if v == "" {
			return
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < lo || f > hi {
			errs = append(errs, fmt.Sprintf("%s%s=%q: expected a number in [%g, %g]", pre, name, v, lo, hi))
			return
		}
		*dst = f
	}
	integer := func(name string, dst *int) {
		v := strings.TrimSpace(getenv(pre + name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Sprintf("%s%s=%q: expected a whole number ≥ 0", pre, name, v))
			return
		}
		*dst = n
	}
	inf := math.Inf(1)
	boolean("SPLIT_FLATTENED_AGENTS", &o.Split)
	number("SEAM_MAX_GAP_SECONDS", &o.SeamMaxGap, 0, inf)
	number("SEAM_MIN_OVERLAP_RATIO", &o.SeamMinOverlap, 0, 1)
	integer("AUX_MAX_REQUESTS", &o.AuxMaxRequests)
	number("AUX_ISL_RATIO", &o.AuxISLRatio, 0, math.MaxFloat64)
	integer("AUX_ISL_FLOOR", &o.AuxISLFloor)
	boolean("AUX_CROSS_MODEL", &o.AuxCrossModel)
	integer("AUX_REDUCTION_OSL_MAX", &o.ReductionOSLMax)
	number("AUX_REDUCTION_RATIO", &o.ReductionRatio, 0, math.MaxFloat64)
	integer("WORKER_GROUP_MIN", &o.WorkerGroupMin)
	return o, errs
}
