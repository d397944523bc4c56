package sim

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/text/tokenizer"
)

// Config configures a Server. The zero value of every field means the
// documented default (see DefaultConfig); New applies the defaults.
//
// The defaults model one H200 (141 GB HBM3e, 4.8 TB/s) serving a
// 32B-parameter dense model in FP8 with a bf16 KV cache (64 layers, 8 KV
// heads of 128: 256 KiB per token), gpu-memory-utilization 0.9: about
// 350k tokens of KV, ~15k prefill tokens/s, an 8 ms decode step at batch 1
// that grows by 0.02 ms per sequence and by 0.055 ms per 1k tokens of
// context read (256 MiB at 4.8 TB/s).
type Config struct {
	// Model is the served model name; requests naming another model get
	// vLLM's 404. Default "agentperf-sim".
	Model string
	// Addr is the address Start listens on. Default "127.0.0.1:0".
	Addr string

	// MaxModelLen is the context window in tokens. Default 131072.
	MaxModelLen int
	// MaxNumSeqs bounds the running sequences per engine; more wait in a
	// FIFO queue. Default 256 (vLLM's default). Ignored with ZeroLatency.
	MaxNumSeqs int
	// MaxNumBatchedTokens is the token budget of one engine step (decode
	// tokens plus chunked prefill). Default 8192.
	MaxNumBatchedTokens int
	// BlockSize is the KV block size in tokens; prefix-cache hits come in
	// multiples of it. Default 16, vLLM's default on CUDA, so cached_tokens
	// have vLLM's granularity (the weka traces' 64-token hash blocks are
	// four of these).
	BlockSize int
	// KVCapacityTokens is the GPU KV capacity per engine in tokens (rounded
	// down to whole blocks). Default 350000. It must hold MaxModelLen
	// tokens, as vLLM requires at start-up.
	KVCapacityTokens int
	// OffloadCapacityTokens is the capacity of the second (CPU offload)
	// tier per engine in tokens; 0 disables the tier. Default 0.
	OffloadCapacityTokens int
	// KVBytesPerToken converts tokens to bytes for the offload byte
	// counters. Default 262144.
	KVBytesPerToken int

	// PrefillTokensPerSec is the prefill rate. Default 15000.
	PrefillTokensPerSec float64
	// DecodeBaseMs is the duration of an engine step with one sequence.
	// Default 8. The three decode knobs treat a negative value as none (0
	// means the default).
	DecodeBaseMs float64
	// DecodePerSeqMs is added to a step per decoding sequence. Default 0.02.
	DecodePerSeqMs float64
	// DecodeMsPer1kContext is added to a step per 1000 tokens of context of
	// the decoding sequences (KV reads). Default 0.055.
	DecodeMsPer1kContext float64
	// ZeroLatency removes every sleep: each response is written at once.
	// The prefix cache still works. For client benchmarks.
	ZeroLatency bool

	// TokensPerChunk is the number of generated tokens per SSE event.
	// Default 1.
	TokensPerChunk int
	// ReasoningRatio is the fraction (0..1) of the generated tokens sent as
	// delta.reasoning_content before the content. Default 0.
	ReasoningRatio float64
	// OverflowWording selects the context-overflow error text and envelope;
	// one of OverflowWordings(). Default "vllm-2026-nested".
	OverflowWording string

	// Engines is the number of data-parallel engines, each with its own
	// cache and queue and its own engine="i" metric series. Default 1.
	Engines int
	// Routing picks an engine: "hash" (default) hashes X-Correlation-ID,
	// falling back to round robin without the header; "round-robin".
	Routing string
	// KeepAliveTimeout closes a client's connection after it was idle this
	// long. Default 5 s, uvicorn's timeout_keep_alive, which vLLM and SGLang
	// serve with; a negative value keeps idle connections open.
	KeepAliveTimeout time.Duration

	// GPUMetrics makes the simulator serve GPU exporter pages driven by
	// its load model (gpu.go): "dcgm" serves NVIDIA DCGM exporter metrics
	// at /dcgm/metrics, "amd" AMD device-metrics-exporter metrics at
	// /amd/metrics; "" (the default) serves neither.
	GPUMetrics string
	// GPUs is the number of GPUs on the GPU page; GPU i follows engine
	// i mod Engines. Default 1.
	GPUs int
	// GPUSchemaChangeAfter, when positive, changes the GPU page this long
	// after the server was created, as an exporter upgraded mid-run does:
	// the power family is renamed (DCGM_FI_DEV_POWER_USAGE becomes
	// DCGM_FI_DEV_POWER_USAGE_INSTANT; gpu_package_power becomes
	// amd_gpu_package_power), the memory clock appears, and the GPU
	// utilisation family turns from gauge to counter.
	GPUSchemaChangeAfter time.Duration

	// Seed seeds every random choice (output lengths without ignore_eos,
	// fault draws). Same seed, same requests ⇒ same behaviour.
	Seed int64
	// Faults configures fault injection; zero injects nothing.
	Faults FaultConfig
	// LazyMetrics makes /metrics expose a histogram series only once it has
	// an observation and a series with a per-value label (source,
	// finished_reason) only once it is non-zero, as servers built on
	// prometheus_client do (llm-d-inference-sim shows no histogram until its
	// first request): series then appear mid-run. Off by default (vLLM
	// exposes every series from the start).
	LazyMetrics bool
	// MetricsDialect is the engine whose /metrics names the simulator
	// writes: one of MetricsDialects() (default "vllm"). "llamacpp" writes
	// llama.cpp's 15 llamacpp:* families (its prompt counter without the
	// cached tokens, no KV usage, one server: engines summed), "sglang"
	// SGLang's, "tgi" those of an engine agentperf does not know.
	MetricsDialect string
	// RecordFirstByte makes the server remember, per X-Request-ID, when it
	// wrote the first content byte (see Server.FirstByte). Off by default
	// because the table grows with every request.
	RecordFirstByte bool
	// RequestLog, when set, gets one JSON line per completion request as
	// it ends (see RequestLogEntry): when it arrived, its request ids, the
	// prompt tokens counted, and when the first content byte was flushed.
	// Benchmarks read it to compare clients against what the server saw.
	// Lines are written one Write call each, under a lock.
	RequestLog io.Writer

	// TokenizerName names the tokenizer when Tokenizer is nil, as
	// tokenizer.Resolve reads it: "" or "builtin", a tokenizer.json (plain
	// or .zst) or tiktoken file, a folder, or a Hugging Face model id found
	// in the local hub cache.
	TokenizerName string
	// Getenv reads the environment for tokenizer resolution (HF_HOME,
	// HF_HUB_CACHE, …). Nil means os.Getenv.
	Getenv func(string) string
	// Tokenizer counts prompt tokens. Nil means TokenizerName, else
	// tokenizer.Builtin().
	Tokenizer tokenizer.Tokenizer
	// Logf, when set, receives one line per notable event (start, faults).
	Logf func(format string, args ...any)
}

// FaultRule says which requests get one fault: every Every-th request
// (counting completion requests from 1) and, independently, each request
// with probability Rate drawn from the seeded generator. Zero disables it.
type FaultRule struct {
	Rate  float64
	Every int
}

func (r FaultRule) enabled() bool { return r.Rate > 0 || r.Every > 0 }

// FaultConfig configures fault injection. At most one fault applies to a
// request; rules are tried in the order of the fields.
type FaultConfig struct {
	// DownAfterRequests starts a down window when completion request
	// number DownAfterRequests+1 arrives: for DownFor, every request and
	// every new connection is reset. Zero disables it.
	DownAfterRequests int
	// DownFor is the length of the down window. Default 5s when
	// DownAfterRequests is set.
	DownFor time.Duration
	// After exempts the first After completion requests from the
	// per-request rules below (e.g. a client's warmup); Every still counts
	// requests from 1. Zero exempts none.
	After int

	HTTP500            FaultRule // HTTP 500 with an error body
	HTTP503            FaultRule // HTTP 503 with an error body and Retry-After
	HTTP429            FaultRule // HTTP 429 with an error body and Retry-After
	ResetBeforeHeaders FaultRule // TCP reset after reading the request
	SlowFirstByte      FaultRule // wait SlowFirstByteFor before the headers
	ResetMidStream     FaultRule // TCP reset after half of the tokens
	Stall              FaultRule // hold the stream open StallFor after half of the tokens, then finish
	MalformedSSE       FaultRule // one malformed data line (truncated JSON) mid-stream
	StreamError        FaultRule // a data: {"error":{…}} event mid-stream, then [DONE]
	MissingUsage       FaultRule // no usage even when include_usage is set

	// SlowFirstByteFor is the delay of SlowFirstByte. Default 2s.
	SlowFirstByteFor time.Duration
	// StallFor is the length of a Stall. Default 5s.
	StallFor time.Duration
}

// Fault names, as used in flags (--fault-<name>-rate, --fault-<name>-every)
// and as keys of Stats.Faults.
const (
	FaultDown               = "down"
	FaultHTTP500            = "500"
	FaultHTTP503            = "503"
	FaultHTTP429            = "429"
	FaultResetBeforeHeaders = "reset-before-headers"
	FaultSlowFirstByte      = "slow-first-byte"
	FaultResetMidStream     = "reset-mid-stream"
	FaultStall              = "stall"
	FaultMalformedSSE       = "malformed-sse"
	FaultStreamError        = "stream-error"
	FaultMissingUsage       = "missing-usage"
)

// faultRules lists the per-request rules in the order they are tried.
func (f *FaultConfig) faultRules() []struct {
	name string
	rule *FaultRule
} {
	return []struct {
		name string
		rule *FaultRule
	}{
		{FaultHTTP500, &f.HTTP500},
		{FaultHTTP503, &f.HTTP503},
		{FaultHTTP429, &f.HTTP429},
		{FaultResetBeforeHeaders, &f.ResetBeforeHeaders},
		{FaultSlowFirstByte, &f.SlowFirstByte},
		{FaultResetMidStream, &f.ResetMidStream},
		{FaultStall, &f.Stall},
		{FaultMalformedSSE, &f.MalformedSSE},
		{FaultStreamError, &f.StreamError},
		{FaultMissingUsage, &f.MissingUsage},
	}
}

// DefaultConfig returns the configuration with every default filled in,
// except Model, which stays empty so that an embedding command can fill
// in the model it was asked to use ("" still means "agentperf-sim" in New).
func DefaultConfig() Config {
	var c Config
	c.applyDefaults()
	c.Model = ""
	return c
}

func (c *Config) applyDefaults() {
	setDefault(&c.Model, "agentperf-sim")
	setDefault(&c.Addr, "127.0.0.1:0")
	setDefault(&c.MaxModelLen, 131072)
	setDefault(&c.MaxNumSeqs, 256)
	setDefault(&c.MaxNumBatchedTokens, 8192)
	setDefault(&c.BlockSize, 16)
	setDefault(&c.KVCapacityTokens, 350000)
	setDefault(&c.KVBytesPerToken, 262144)
	setDefault(&c.PrefillTokensPerSec, 15000)
	setDefault(&c.DecodeBaseMs, 8)
	setDefault(&c.DecodePerSeqMs, 0.02)
	setDefault(&c.DecodeMsPer1kContext, 0.055)
	setDefault(&c.TokensPerChunk, 1)
	setDefault(&c.OverflowWording, "vllm-2026-nested")
	setDefault(&c.MetricsDialect, "vllm")
	setDefault(&c.Engines, 1)
	setDefault(&c.Routing, "hash")
	setDefault(&c.GPUs, 1)
	setDefault(&c.KeepAliveTimeout, 5*time.Second)
	setDefault(&c.Faults.SlowFirstByteFor, 2*time.Second)
	setDefault(&c.Faults.StallFor, 5*time.Second)
	if c.Faults.DownAfterRequests > 0 {
		setDefault(&c.Faults.DownFor, 5*time.Second)
	}
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Validate reports the first setting that is out of range, naming it as
// its flag. It assumes defaults were applied (New does).
func (c *Config) Validate() error {
	var errs []error
	bad := func(flag string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("sim: --%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	if c.MaxModelLen < 2 {
		bad("max-model-len", "must be at least 2, got %d", c.MaxModelLen)
	}
	if c.MaxNumSeqs < 1 {
		bad("max-num-seqs", "must be at least 1, got %d", c.MaxNumSeqs)
	}
	if c.MaxNumBatchedTokens < 1 {
		bad("max-num-batched-tokens", "must be at least 1, got %d", c.MaxNumBatchedTokens)
	}
	if c.BlockSize < 1 || c.BlockSize > 4096 {
		bad("block-size", "must be in 1..4096, got %d", c.BlockSize)
	}
	if c.KVCapacityTokens/max(c.BlockSize, 1)*max(c.BlockSize, 1) < c.MaxModelLen+c.BlockSize {
		bad("kv-capacity-tokens", "%d tokens cannot hold one sequence of --max-model-len %d plus a block; vLLM refuses to start in this case too: raise the capacity or lower --max-model-len", c.KVCapacityTokens, c.MaxModelLen)
	}
	if c.OffloadCapacityTokens < 0 {
		bad("offload-capacity-tokens", "must not be negative, got %d", c.OffloadCapacityTokens)
	}
	if c.KVBytesPerToken < 0 {
		bad("kv-bytes-per-token", "must not be negative, got %d", c.KVBytesPerToken)
	}
	if !(c.PrefillTokensPerSec > 0) {
		bad("prefill-tokens-per-sec", "must be positive, got %g", c.PrefillTokensPerSec)
	}
	if c.DecodeBaseMs < 0 && c.DecodePerSeqMs < 0 && c.DecodeMsPer1kContext < 0 && !c.ZeroLatency {
		bad("decode-base-ms", "with every decode knob negative (none) steps take no time; use --zero-latency instead")
	}
	if c.TokensPerChunk < 1 {
		bad("tokens-per-chunk", "must be at least 1, got %d", c.TokensPerChunk)
	}
	if c.ReasoningRatio < 0 || c.ReasoningRatio > 1 {
		bad("reasoning-ratio", "must be in 0..1, got %g", c.ReasoningRatio)
	}
	if !slices.Contains(MetricsDialects(), c.MetricsDialect) {
		bad("metrics-dialect", "unknown dialect %q; use one of %s", c.MetricsDialect, strings.Join(MetricsDialects(), ", "))
	}
	if _, ok := overflowWordings[c.OverflowWording]; !ok {
		bad("overflow-wording", "unknown wording %q; use one of %s", c.OverflowWording, strings.Join(OverflowWordings(), ", "))
	}
	if c.Engines < 1 || c.Engines > 1024 {
		bad("engines", "must be in 1..1024, got %d", c.Engines)
	}
	if c.GPUMetrics != "" && c.GPUMetrics != "dcgm" && c.GPUMetrics != "amd" {
		bad("gpu-metrics", "must be dcgm, amd or empty, got %q", c.GPUMetrics)
	}
	if c.GPUs < 1 || c.GPUs > 1024 {
		bad("gpus", "must be in 1..1024, got %d", c.GPUs)
	}
	if c.Routing != "hash" && c.Routing != "round-robin" {
		bad("routing", "must be hash or round-robin, got %q", c.Routing)
	}
	for _, r := range c.Faults.faultRules() {
		if r.rule.Rate < 0 || r.rule.Rate > 1 {
			bad("fault-"+r.name+"-rate", "must be in 0..1, got %g", r.rule.Rate)
		}
		if r.rule.Every < 0 {
			bad("fault-"+r.name+"-every", "must not be negative, got %d", r.rule.Every)
		}
	}
	if c.Faults.After < 0 {
		bad("fault-after-requests", "must not be negative, got %d", c.Faults.After)
	}
	if c.Faults.DownAfterRequests < 0 {
		bad("fault-down-after-requests", "must not be negative, got %d", c.Faults.DownAfterRequests)
	}
	if c.Faults.DownFor < 0 || c.Faults.StallFor < 0 || c.Faults.SlowFirstByteFor < 0 {
		bad("fault-*-for", "durations must not be negative")
	}
	return errors.Join(errs...)
}

// RegisterFlags defines one flag per knob of c on fs, with c's current
// values as defaults; parsing fs writes into c. ParseURL accepts the same
// names as URL query keys. Config.Addr, Tokenizer, Getenv and Logf have no flag.
func RegisterFlags(fs *pflag.FlagSet, c *Config) {
	fs.StringVar(&c.Model, "model", c.Model, "served model name (empty: agentperf-sim); requests for another model get a 404")
	fs.IntVar(&c.MaxModelLen, "max-model-len", c.MaxModelLen, "context window in tokens; prompt + max tokens above it get vLLM's 400")
	fs.IntVar(&c.MaxNumSeqs, "max-num-seqs", c.MaxNumSeqs, "running sequences per engine; more wait in a queue")
	fs.IntVar(&c.MaxNumBatchedTokens, "max-num-batched-tokens", c.MaxNumBatchedTokens, "token budget of one engine step (decode + chunked prefill)")
	fs.IntVar(&c.BlockSize, "block-size", c.BlockSize, "KV block size in tokens (prefix-cache granularity)")
	fs.IntVar(&c.KVCapacityTokens, "kv-capacity-tokens", c.KVCapacityTokens, "GPU KV capacity per engine in tokens")
	fs.IntVar(&c.OffloadCapacityTokens, "offload-capacity-tokens", c.OffloadCapacityTokens, "CPU offload tier capacity per engine in tokens (0 = no tier)")
	fs.IntVar(&c.KVBytesPerToken, "kv-bytes-per-token", c.KVBytesPerToken, "KV bytes per token, for the offload byte counters")
	fs.Float64Var(&c.PrefillTokensPerSec, "prefill-tokens-per-sec", c.PrefillTokensPerSec, "prefill rate in tokens/s")
	fs.Float64Var(&c.DecodeBaseMs, "decode-base-ms", c.DecodeBaseMs, "engine step time with one sequence, ms (negative = none)")
	fs.Float64Var(&c.DecodePerSeqMs, "decode-per-seq-ms", c.DecodePerSeqMs, "step time added per decoding sequence, ms (negative = none)")
	fs.Float64Var(&c.DecodeMsPer1kContext, "decode-ms-per-1k-context", c.DecodeMsPer1kContext, "step time added per 1000 context tokens of decoding sequences, ms (negative = none)")
	fs.BoolVar(&c.ZeroLatency, "zero-latency", c.ZeroLatency, "no sleeps at all: write each response at once (client benchmarks)")
	fs.IntVar(&c.TokensPerChunk, "tokens-per-chunk", c.TokensPerChunk, "generated tokens per SSE event")
	fs.Float64Var(&c.ReasoningRatio, "reasoning-ratio", c.ReasoningRatio, "fraction of generated tokens sent as delta.reasoning_content")
	fs.StringVar(&c.OverflowWording, "overflow-wording", c.OverflowWording, "context-overflow error text and envelope: "+strings.Join(OverflowWordings(), ", "))
	fs.IntVar(&c.Engines, "engines", c.Engines, "data-parallel engines, each with its own cache, queue and metric series")
	fs.DurationVar(&c.KeepAliveTimeout, "keep-alive-timeout", c.KeepAliveTimeout, "close a connection idle this long, as uvicorn does under vLLM and SGLang (negative = keep it open)")
	fs.StringVar(&c.Routing, "routing", c.Routing, "engine choice: hash (of X-Correlation-ID, round robin without it) or round-robin")
	fs.StringVar(&c.GPUMetrics, "gpu-metrics", c.GPUMetrics, "serve GPU exporter metrics driven by the load model: dcgm (NVIDIA DCGM exporter, at /dcgm/metrics) or amd (AMD device-metrics-exporter, at /amd/metrics)")
	fs.IntVar(&c.GPUs, "gpus", c.GPUs, "GPUs on the GPU metrics page (GPU i follows engine i mod --engines)")
	fs.DurationVar(&c.GPUSchemaChangeAfter, "gpu-schema-change-after", c.GPUSchemaChangeAfter, "rename and retype GPU metric families this long after start, as an exporter upgraded mid-run (0 = never)")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "seed of output lengths (without ignore_eos) and fault draws")
	fs.StringVar(&c.MetricsDialect, "metrics-dialect", c.MetricsDialect, "engine whose /metrics names to write: "+strings.Join(MetricsDialects(), ", ")+" (with --overflow-wording llamacpp or sglang, the server answers in that engine's dialect)")
	fs.BoolVar(&c.LazyMetrics, "lazy-metrics", c.LazyMetrics, "expose histograms and labelled series on /metrics only once used (series appear mid-run, as on prometheus_client servers)")
	fs.BoolVar(&c.RecordFirstByte, "record-first-byte", c.RecordFirstByte, "remember the first content byte time per X-Request-ID (memory grows per request)")
	fs.StringVar(&c.TokenizerName, "tokenizer", c.TokenizerName, "tokenizer for prompt token counts: builtin, a tokenizer.json[.zst] or tiktoken file, a folder, or a model id in the local HF cache")
	f := &c.Faults
	fs.IntVar(&f.DownAfterRequests, "fault-down-after-requests", f.DownAfterRequests, "reset every request and connection for --fault-down-for once this many completion requests arrived (0 = never)")
	fs.DurationVar(&f.DownFor, "fault-down-for", f.DownFor, "length of the down window (default 5s)")
	fs.IntVar(&f.After, "fault-after-requests", f.After, "exempt the first N completion requests (e.g. a warmup) from the per-request faults below")
	for _, r := range f.faultRules() {
		fs.Float64Var(&r.rule.Rate, "fault-"+r.name+"-rate", r.rule.Rate, "probability (0..1) of the "+r.name+" fault per request")
		fs.IntVar(&r.rule.Every, "fault-"+r.name+"-every", r.rule.Every, "inject the "+r.name+" fault into every N-th request (0 = never)")
	}
	fs.DurationVar(&f.SlowFirstByteFor, "fault-slow-first-byte-for", f.SlowFirstByteFor, "delay of the slow-first-byte fault")
	fs.DurationVar(&f.StallFor, "fault-stall-for", f.StallFor, "length of the stall fault")
}

// ParseURL returns base with the settings of a sim URL applied. The URL is
// "sim://" or "sim:" followed by an optional query whose keys are the flag
// names of RegisterFlags, e.g.
//
//	sim://?max-model-len=131072&zero-latency=true&fault-500-rate=0.01
//
// A bare key (?zero-latency) sets a boolean to true. An unknown key, a bad
// value or any host, path or fragment is an error naming it.
func ParseURL(raw string, base Config) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return base, fmt.Errorf("sim URL %q: %w", raw, err)
	}
	if u.Scheme != "sim" {
		return base, fmt.Errorf("sim URL %q: scheme must be sim (as in sim://?max-model-len=8192)", raw)
	}
	if u.Host != "" || (u.Path != "" && u.Path != "/") || u.Opaque != "" || u.Fragment != "" || u.User != nil {
		return base, fmt.Errorf("sim URL %q: only a query is allowed after sim://", raw)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return base, fmt.Errorf("sim URL %q: query: %w", raw, err)
	}
	cfg := base
	fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	RegisterFlags(fs, &cfg)
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := fs.Lookup(k)
		if f == nil {
			return base, fmt.Errorf("sim URL %q: unknown setting %q (settings are the flags of 'agentperf sim', e.g. max-model-len, zero-latency, fault-500-rate)", raw, k)
		}
		for _, v := range q[k] {
			if v == "" && f.Value.Type() == "bool" {
				v = "true"
			}
			if err := fs.Set(k, v); err != nil {
				return base, fmt.Errorf("sim URL %q: setting %s=%q: %w", raw, k, v, err)
			}
		}
	}
	return cfg, nil
}
