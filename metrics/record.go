package metrics

// Phase is the benchmark phase a request belongs to.
type Phase string

// The phases of an agentic replay.
const (
	PhaseWarmup    Phase = "warmup"
	PhaseProfiling Phase = "profiling"
)

// Record is everything measured about one request, as the replay engine
// produced it. It holds raw timestamps and counts only; the per-record
// metrics (docs/artifacts.md) are derived from it by Compute. All *Ns fields are Unix epoch nanoseconds derived from a
// monotonic clock (0 means "did not happen").
type Record struct {
	// Identity.
	SessionNum          int    // sequential session (conversation instance) number
	XRequestID          string // sent as X-Request-ID
	XCorrelationID      string // session id, sent as X-Correlation-ID
	ConversationID      string // trace id (subagents "<trace>::sa:<agent>")
	TurnIndex           int    // turn within the conversation
	SourceTraceID       string
	SourceOuterIdx      int
	SourceKind          string // "weka_main" for parent turns
	AgentDepth          int
	ParentCorrelationID string
	RootCorrelationID   string
	Lane                int    // lane index, 0-based
	WorkerID            string // "lane_0007" (the global lane index in a sharded run)
	Shard               string // "I/N" in a sharded run, "" otherwise
	Phase               Phase
	Model               string

	// Scheduling and timing.
	CreditIssuedNs int64 // when the scheduler decided to send (intended send time)
	RequestStartNs int64 // just before the request was written
	RequestAckNs   int64 // first response byte
	FirstChunkNs   int64 // first chunk with non-empty content or reasoning
	SecondChunkNs  int64 // second such chunk
	FirstOutputNs  int64 // first chunk with non-empty (non-reasoning) content
	LastChunkNs    int64 // last chunk with non-empty content or reasoning
	RequestEndNs   int64 // response fully consumed, or time of the error
	ContentChunks  int   // number of chunks with non-empty content or reasoning
	// NonStreaming marks a response read whole (no SSE): its TTFT, ITL and
	// the metrics derived from them are not measurable and are left out.
	NonStreaming bool

	// Token counts. Usage is nil when the server sent none.
	Usage       *Usage
	MaxTokens   int // requested max (completion) tokens
	RecordedIn  int // the trace's recorded `in`
	RecordedOut int // the trace's recorded `out`
	PromptBytes int // bytes of the request body
	HitBlocks   int // theoretical prefix-cache hit blocks (definition C)
	TotalBlocks int // theoretical prefix-cache total blocks

	// Attempt is the attempt number of a warmup request sent again after a
	// transient failure (2, 3, …); 0 for a request's first attempt.
	// Retried marks a failed attempt after which the request was sent
	// again: the request is not done with this record.
	Attempt int
	Retried bool
	// RestartTries is how many times the request was sent while the
	// server was restarting (HTTP 503 "Loading model", or a refused
	// connection after it had answered), RestartWaitNs how long that
	// took from its first try; 0 when it never met a restart
	// (docs/server-restarts.md). The wait is inside the request's time.
	RestartTries  int
	RestartWaitNs int64

	// Outcome.
	Cancelled       bool
	CancellationNs  int64
	ContextOverflow bool   // the error was classified as a context overflow
	Error           *Error // nil on success
	// Bucket is where the request is accounted, decided once when the
	// record is made (BucketOf); everything that counts records reads it.
	Bucket Bucket
}

// Bucket is the one place a finished request is accounted in.
type Bucket uint8

// The buckets. BucketUnset means "not classified yet": readers resolve it
// with BucketOf.
const (
	BucketUnset Bucket = iota
	BucketProfilingOK
	BucketProfilingError
	BucketWarmupOK
	BucketWarmupError
	BucketOverflow
	BucketCancelled
)

// String returns the bucket's accounting name.
func (b Bucket) String() string {
	switch b {
	case BucketProfilingOK:
		return "profiling_ok"
	case BucketProfilingError:
		return "profiling_errors"
	case BucketWarmupOK:
		return "warmup_ok"
	case BucketWarmupError:
		return "warmup_errors"
	case BucketOverflow:
		return "context_overflows"
	case BucketCancelled:
		return "cancelled"
	}
	return "unset"
}

// BucketOf classifies r from its outcome fields: a context overflow
// (either phase), then a cancellation, then an error or a success of its
// phase. It is the only classification; a record made by the engine
// carries its result in Bucket, and readers of exported records call it
// once per record.
func BucketOf(r *Record) Bucket {
	switch {
	case r.ContextOverflow:
		return BucketOverflow
	case r.Cancelled || (r.Error != nil && r.Error.Category == CategoryCancelled):
		return BucketCancelled
	case r.Phase == PhaseWarmup && r.Error != nil:
		return BucketWarmupError
	case r.Phase == PhaseWarmup:
		return BucketWarmupOK
	case r.Error != nil:
		return BucketProfilingError
	}
	return BucketProfilingOK
}

// OK reports whether b is a success (of either phase): a record every
// figure is computed from. Every other bucket is a request that failed,
// overflowed the context or was cancelled.
func (b Bucket) OK() bool { return b == BucketProfilingOK || b == BucketWarmupOK }

// bucket returns r.Bucket, classifying r when it was not.
func (r *Record) bucket() Bucket {
	if r.Bucket != BucketUnset {
		return r.Bucket
	}
	return BucketOf(r)
}

// Usage is the OpenAI `usage` object of the last chunk that carried one.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	ReasoningTokens  int // completion_tokens_details.reasoning_tokens
	CachedTokens     int // prompt_tokens_details.cached_tokens
	HasCached        bool
	HasReasoning     bool
}

// Error describes a failed request: an HTTP status >= 400, a transport
// failure, an error event in the stream, or a cancellation.
//
// Code is the HTTP status of an error response (≥ 400), or the numeric
// code of an error event inside a stream; it is 0 (written as absent) for
// every failure the server did not report with a code of its own:
// transport errors, timeouts, malformed bodies (SSE or not), incomplete
// streams, cancellations.
type Error struct {
	Code     int    // HTTP status or stream error code; 0 when the server gave none
	Type     string // HTTP reason phrase ("Too Many Requests") or error class ("ConnectionReset")
	Message  string // body text or error text (secrets redacted)
	Category string // one of the Category* constants
	// ServerType is the server's own error type from its error body or
	// stream error event ("RateLimitError", "BadRequestError"); "" when it
	// gave none. Written as error_type.
	ServerType string
}

// Error categories used in error records and summaries.
const (
	CategoryHTTP        = "http_error"
	CategoryTransport   = "transport_error"
	CategoryTimeout     = "timeout"
	CategoryStreamError = "stream_error" // an error event inside the SSE stream
	CategoryMalformed   = "malformed_response"
	CategoryCancelled   = "cancelled"
)

// Sink receives records as they complete. Implementations must be safe for
// concurrent use; Add must not retain r after returning unless it copies it.
type Sink interface {
	Add(r *Record)
}
