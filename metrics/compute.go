package metrics

import "math"

// Values holds the per-record metrics of profile_export.jsonl
// (docs/artifacts.md) in display units (milliseconds, tokens,
// tokens/sec/user, percent).
// A metric that could not be computed for the record is NaN; use Has or
// the metric table (Metrics) to test presence. Token counts are whole
// numbers stored as float64.
type Values struct {
	TTFT                   float64 // time_to_first_token, ms
	TTST                   float64 // time_to_second_token, ms (second − first content chunk)
	TTFO                   float64 // time_to_first_output_token, ms
	RequestLatency         float64 // request_latency, ms (last content chunk − start)
	DecodeDuration         float64 // decode_duration, ms (latency − TTFT)
	FullDecodeDuration     float64 // full_decode_duration, ms (end − first content chunk)
	ITL                    float64 // inter_token_latency, ms; OSL ≥ 2
	FullResponseITL        float64 // full_response_inter_token_latency, ms; OSL ≥ 2
	OutputTPSPerUser       float64 // output_token_throughput_per_user = 1000/ITL
	FullResponseTPSPerUser float64 // (OSL − 1) / full decode duration (s)
	E2EOutputTPS           float64 // e2e_output_token_throughput = OSL / latency (s)
	PrefillTPSPerUser      float64 // prefill_throughput_per_user = ISL / TTFT (s)
	ISL                    float64 // input_sequence_length (server usage), tokens
	OSL                    float64 // output_sequence_length (server usage), tokens
	OutputTokenCount       float64 // completion − reasoning tokens
	ReasoningTokenCount    float64 // reasoning tokens, when reported
	UsagePromptTokens      float64
	UsageCompletionTokens  float64
	UsageTotalTokens       float64
	UsageReasoningTokens   float64
	UsageCacheReadTokens   float64 // usage_prompt_cache_read_tokens
	OSLMismatchPct         float64 // osl_mismatch_diff_pct: (OSL − max_tokens)/max_tokens × 100
	ErrorISL               float64 // error_isl: errored records only, when known
}

var nan = math.NaN()

// emptyValues has every metric absent.
var emptyValues = Values{nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan,
	nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan}

// Sources of error_isl, written as error.details.error_isl_source.
const (
	// ErrorISLFromUsage: usage.prompt_tokens the server reported before it
	// failed (the unit of ISL under --use-server-token-count).
	ErrorISLFromUsage = "server_usage"
	// ErrorISLFromTrace: the trace's recorded input length (`in`), which the
	// synthesised prompt matches exactly in the synthesis tokenizer's count,
	// before the chat template and the cache-bust marker; not the server's
	// count, so it can differ from the ISL of the records beside it.
	ErrorISLFromTrace = "trace"
)

// ErrorISLSource says where the error_isl of a failed, cancelled or
// overflowed record comes from ("" when it has none; see Compute).
func ErrorISLSource(r *Record) string {
	switch {
	case r.Usage != nil && r.Usage.PromptTokens > 0:
		return ErrorISLFromUsage
	case r.RecordedIn > 0:
		return ErrorISLFromTrace
	}
	return ""
}

// Has reports whether v is present (not NaN).
func Has(v float64) bool { return v == v }

// nsToMs converts a nanosecond duration to milliseconds.
func nsToMs(d int64) float64 { return float64(d) / 1e6 }

// Compute derives the per-record metrics of r, with aiperf's definitions.
// Successful records get timing metrics from their chunk timestamps and
// token metrics from the server's usage (ISL and OSL are the server's
// counts: no usage ⇒ no ISL/OSL and nothing that depends on them). Errored or cancelled records (r.Error != nil or
// r.Cancelled) carry only ErrorISL: usage.prompt_tokens when the server sent
// usage, else the trace's recorded input length when known.
func Compute(r *Record) Values {
	v := emptyValues
	if r.Error != nil || r.Cancelled || r.ContextOverflow {
		switch ErrorISLSource(r) {
		case ErrorISLFromUsage:
			v.ErrorISL = float64(r.Usage.PromptTokens)
		case ErrorISLFromTrace:
			v.ErrorISL = float64(r.RecordedIn)
		}
		return v
	}
	start := r.RequestStartNs
	hasFirst := r.FirstChunkNs > 0 && start > 0
	if hasFirst {
		v.TTFT = nsToMs(r.FirstChunkNs - start)
	}
	if r.SecondChunkNs > 0 && r.FirstChunkNs > 0 {
		v.TTST = nsToMs(r.SecondChunkNs - r.FirstChunkNs)
	}
	if r.FirstOutputNs > 0 && start > 0 {
		v.TTFO = nsToMs(r.FirstOutputNs - start)
	}
	if r.LastChunkNs > 0 && start > 0 {
		v.RequestLatency = nsToMs(r.LastChunkNs - start)
	}
	if hasFirst && r.LastChunkNs > 0 {
		v.DecodeDuration = nsToMs(r.LastChunkNs - r.FirstChunkNs)
	}
	if r.FirstChunkNs > 0 && r.RequestEndNs >= r.FirstChunkNs {
		v.FullDecodeDuration = nsToMs(r.RequestEndNs - r.FirstChunkNs)
	}
	if u := r.Usage; u != nil {
		v.UsagePromptTokens = float64(u.PromptTokens)
		v.UsageCompletionTokens = float64(u.CompletionTokens)
		v.UsageTotalTokens = float64(u.TotalTokens)
		v.ISL = float64(u.PromptTokens)
		v.OSL = float64(u.CompletionTokens)
		reasoning := 0
		if u.HasReasoning {
			reasoning = u.ReasoningTokens
			v.ReasoningTokenCount = float64(reasoning)
			v.UsageReasoningTokens = float64(reasoning)
		}
		v.OutputTokenCount = float64(u.CompletionTokens - reasoning)
		if u.HasCached {
			v.UsageCacheReadTokens = float64(u.CachedTokens)
		}
		if r.MaxTokens > 0 {
			v.OSLMismatchPct = (v.OSL - float64(r.MaxTokens)) / float64(r.MaxTokens) * 100
		}
	}
	if Has(v.OSL) && v.OSL >= 2 {
		if Has(v.DecodeDuration) {
			v.ITL = v.DecodeDuration / (v.OSL - 1)
			if v.ITL > 0 {
				v.OutputTPSPerUser = 1000 / v.ITL
			}
		}
		if Has(v.FullDecodeDuration) {
			v.FullResponseITL = v.FullDecodeDuration / (v.OSL - 1)
			if v.FullDecodeDuration > 0 {
				v.FullResponseTPSPerUser = (v.OSL - 1) / (v.FullDecodeDuration / 1000)
			}
		}
	}
	if Has(v.OSL) && Has(v.RequestLatency) && v.RequestLatency > 0 {
		v.E2EOutputTPS = v.OSL / (v.RequestLatency / 1000)
	}
	if Has(v.ISL) && Has(v.TTFT) && v.TTFT > 0 {
		v.PrefillTPSPerUser = v.ISL / (v.TTFT / 1000)
	}
	if r.NonStreaming {
		// The whole response arrives at once: its first token and the gaps
		// between tokens cannot be observed, so nothing derived from them
		// is reported (aiperf marks these metrics streaming-only).
		v.TTFT, v.TTST, v.TTFO = nan, nan, nan
		v.DecodeDuration, v.FullDecodeDuration = nan, nan
		v.ITL, v.FullResponseITL, v.OutputTPSPerUser, v.FullResponseTPSPerUser = nan, nan, nan, nan
		v.PrefillTPSPerUser = nan
	}
	return v
}

// streamingOnly are the record metrics a response read whole (no SSE,
// Record.NonStreaming) never has: Compute leaves them out, as aiperf
// marks them streaming-only.
var streamingOnly = map[string]bool{
	"time_to_first_token": true, "time_to_second_token": true, "time_to_first_output_token": true,
	"inter_token_latency": true, "time_per_output_token": true, "full_response_inter_token_latency": true,
	"decode_duration": true, "full_decode_duration": true,
	"output_token_throughput_per_user": true, "full_response_output_token_throughput_per_user": true,
	"prefill_throughput_per_user": true,
}

// StreamingOnly reports whether the record metric tag is measured only
// on streamed responses (TTFT, ITL and what derives from them): a run
// without streaming has no value of it.
func StreamingOnly(tag string) bool { return streamingOnly[tag] }

// Metric describes one per-record metric: its aiperf tag, display header
// (for CSVs), unit, whether its values are whole numbers (written as JSON
// integers), and how to read it from Values.
type Metric struct {
	Tag    string
	Header string
	Unit   string
	Int    bool
	Get    func(*Values) float64
	set    func(*Values, float64)
}

// Metrics is the table of per-record metrics in export order (read-only:
// callers must not modify it). The aggregate export has one stat block per
// tag that has values. time_per_output_token repeats inter_token_latency
// because InferenceX lists it among the record metrics it needs (its
// website reads it before inter_token_latency; aiperf never writes it).
var Metrics = []Metric{
	{"request_latency", "Request Latency", "ms", false, func(v *Values) float64 { return v.RequestLatency }, func(v *Values, x float64) { v.RequestLatency = x }},
	{"time_to_first_token", "Time to First Token", "ms", false, func(v *Values) float64 { return v.TTFT }, func(v *Values, x float64) { v.TTFT = x }},
	{"time_to_second_token", "Time to Second Token", "ms", false, func(v *Values) float64 { return v.TTST }, func(v *Values, x float64) { v.TTST = x }},
	{"time_to_first_output_token", "Time to First Output Token", "ms", false, func(v *Values) float64 { return v.TTFO }, func(v *Values, x float64) { v.TTFO = x }},
	{"inter_token_latency", "Inter Token Latency", "ms", false, func(v *Values) float64 { return v.ITL }, func(v *Values, x float64) { v.ITL = x }},
	{"time_per_output_token", "Time Per Output Token", "ms", false, func(v *Values) float64 { return v.ITL }, nil},
	{"full_response_inter_token_latency", "Full Response Inter Token Latency", "ms", false, func(v *Values) float64 { return v.FullResponseITL }, func(v *Values, x float64) { v.FullResponseITL = x }},
	{"decode_duration", "Decode Duration", "ms", false, func(v *Values) float64 { return v.DecodeDuration }, func(v *Values, x float64) { v.DecodeDuration = x }},
	{"full_decode_duration", "Full Decode Duration", "ms", false, func(v *Values) float64 { return v.FullDecodeDuration }, func(v *Values, x float64) { v.FullDecodeDuration = x }},
	{"output_token_throughput_per_user", "Output Token Throughput Per User", "tokens/sec/user", false, func(v *Values) float64 { return v.OutputTPSPerUser }, func(v *Values, x float64) { v.OutputTPSPerUser = x }},
	{"full_response_output_token_throughput_per_user", "Full Response Output Token Throughput Per User", "tokens/sec/user", false, func(v *Values) float64 { return v.FullResponseTPSPerUser }, func(v *Values, x float64) { v.FullResponseTPSPerUser = x }},
	{"e2e_output_token_throughput", "E2E Output Token Throughput", "tokens/sec/user", false, func(v *Values) float64 { return v.E2EOutputTPS }, func(v *Values, x float64) { v.E2EOutputTPS = x }},
	{"prefill_throughput_per_user", "Prefill Throughput Per User", "tokens/sec/user", false, func(v *Values) float64 { return v.PrefillTPSPerUser }, func(v *Values, x float64) { v.PrefillTPSPerUser = x }},
	{"input_sequence_length", "Input Sequence Length", "tokens", true, func(v *Values) float64 { return v.ISL }, func(v *Values, x float64) { v.ISL = x }},
	{"output_sequence_length", "Output Sequence Length", "tokens", true, func(v *Values) float64 { return v.OSL }, func(v *Values, x float64) { v.OSL = x }},
	{"output_token_count", "Output Token Count", "tokens", true, func(v *Values) float64 { return v.OutputTokenCount }, func(v *Values, x float64) { v.OutputTokenCount = x }},
	{"reasoning_token_count", "Reasoning Token Count", "tokens", true, func(v *Values) float64 { return v.ReasoningTokenCount }, func(v *Values, x float64) { v.ReasoningTokenCount = x }},
	{"usage_prompt_tokens", "Usage Prompt Tokens", "tokens", true, func(v *Values) float64 { return v.UsagePromptTokens }, func(v *Values, x float64) { v.UsagePromptTokens = x }},
	{"usage_completion_tokens", "Usage Completion Tokens", "tokens", true, func(v *Values) float64 { return v.UsageCompletionTokens }, func(v *Values, x float64) { v.UsageCompletionTokens = x }},
	{"usage_total_tokens", "Usage Total Tokens", "tokens", true, func(v *Values) float64 { return v.UsageTotalTokens }, func(v *Values, x float64) { v.UsageTotalTokens = x }},
	{"usage_reasoning_tokens", "Usage Reasoning Tokens", "tokens", true, func(v *Values) float64 { return v.UsageReasoningTokens }, func(v *Values, x float64) { v.UsageReasoningTokens = x }},
	{"usage_prompt_cache_read_tokens", "Usage Prompt Cache Read Tokens", "tokens", true, func(v *Values) float64 { return v.UsageCacheReadTokens }, func(v *Values, x float64) { v.UsageCacheReadTokens = x }},
	{"osl_mismatch_diff_pct", "OSL Mismatch Diff", "%", false, func(v *Values) float64 { return v.OSLMismatchPct }, func(v *Values, x float64) { v.OSLMismatchPct = x }},
	{"error_isl", "Error Input Sequence Length", "tokens", true, func(v *Values) float64 { return v.ErrorISL }, func(v *Values, x float64) { v.ErrorISL = x }},
}

// numMetrics is len(Metrics).
const numMetrics = 24

// array returns the values in Metrics order without calling through the
// table's function values (so that v does not escape on the hot path).
// TestValuesArrayMatchesTable keeps it in step with Metrics.
func (v *Values) array() [numMetrics]float64 {
	return [numMetrics]float64{v.RequestLatency, v.TTFT, v.TTST, v.TTFO, v.ITL, v.ITL, v.FullResponseITL,
		v.DecodeDuration, v.FullDecodeDuration, v.OutputTPSPerUser, v.FullResponseTPSPerUser, v.E2EOutputTPS,
		v.PrefillTPSPerUser, v.ISL, v.OSL, v.OutputTokenCount, v.ReasoningTokenCount, v.UsagePromptTokens,
		v.UsageCompletionTokens, v.UsageTotalTokens, v.UsageReasoningTokens, v.UsageCacheReadTokens,
		v.OSLMismatchPct, v.ErrorISL}
}

// valuesFromArray is the inverse of Values.array (the alias column of
// time_per_output_token is read from inter_token_latency's).
func valuesFromArray(a *[numMetrics]float64) Values {
	return Values{RequestLatency: a[0], TTFT: a[1], TTST: a[2], TTFO: a[3], ITL: a[4], FullResponseITL: a[6],
		DecodeDuration: a[7], FullDecodeDuration: a[8], OutputTPSPerUser: a[9], FullResponseTPSPerUser: a[10], E2EOutputTPS: a[11],
		PrefillTPSPerUser: a[12], ISL: a[13], OSL: a[14], OutputTokenCount: a[15], ReasoningTokenCount: a[16], UsagePromptTokens: a[17],
		UsageCompletionTokens: a[18], UsageTotalTokens: a[19], UsageReasoningTokens: a[20], UsageCacheReadTokens: a[21],
		OSLMismatchPct: a[22], ErrorISL: a[23]}
}

// metricByTag maps a tag to its index in Metrics (tags written by
// agentperf; aliases such as time_per_output_token have no setter).
func metricByTag(tag string) (int, bool) {
	i, ok := metricsByTag[tag]
	return i, ok
}

// metricsByTag maps the tag of every metric to its index in Metrics (each
// tag is one metric's).
var metricsByTag = func() map[string]int {
	m := make(map[string]int, len(Metrics))
	for i := range Metrics {
		m[Metrics[i].Tag] = i
	}
	return m
}()
