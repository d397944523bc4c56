package replay

import (
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/timing"
)

// convBuilder builds a stream's prompttext.Conversation on first use.
type convBuilder struct {
	syn *prompttext.Synthesizer
	// ownScope gives a child stream a hash-id scope of its own (v0.3)
	// instead of its trace's.
	ownScope bool
	tr       *dataset.Trace
	st       *timing.Stream
	reqs     []dataset.Request
	once     sync.Once
	conv     *prompttext.Conversation
	err      error
}

func (b *convBuilder) get() (*prompttext.Conversation, error) {
	b.once.Do(func() {
		scope := b.tr.ID
		if b.ownScope && b.st.Parent >= 0 {
			scope = b.st.ConvID
		}
		b.conv, b.err = b.syn.StreamConversation(b.tr, scope, b.st.ConvID, b.reqs, b.st.ToolTokens, b.st.SystemTokens)
	})
	return b.conv, b.err
}

// execOut is what execute reports back.
type execOut struct {
	timing.Outcome
	endNs int64
}

// prefixHits returns the theoretical hit counts of turn k of stream st of
// trace ti (definition C over the whole trace: parent and subagent
// requests share one scope).
func (e *engine) prefixHits(ti int, st *timing.Stream, k int) (dataset.HitCount, bool) {
	h := &e.hits[ti]
	h.once.Do(func() {
		tr := &e.c.Traces[ti]
		h.parent, h.subagent = dataset.TracePrefixHits(tr)
		h.subOffset = subagentOffsets(tr)
	})
	inner := st.Turns[k].Inner
	if st.Kind != timing.SourceSubagent {
		if inner < len(h.parent) {
			return h.parent[inner], true
		}
		return dataset.HitCount{}, false
	}
	off, ok := h.subOffset[pathKey(st.Subagent)]
	if !ok || off+inner >= len(h.subagent) {
		return dataset.HitCount{}, false
	}
	return h.subagent[off+inner], true
}

// subagentOffsets maps every subagent entry of tr (by its path) to the
// index of its first request in the depth-first order of
// dataset.TracePrefixHits.
func subagentOffsets(tr *dataset.Trace) map[string]int {
	out := map[string]int{}
	n := 0
	var walk func(ss []dataset.Subagent, path []int)
	walk = func(ss []dataset.Subagent, path []int) {
		for i := range ss {
			p := append(append([]int(nil), path...), i)
			out[pathKey(p)] = n
			n += len(ss[i].Requests)
			walk(ss[i].Subagents, p)
		}
	}
	walk(tr.Subagents, nil)
	return out
}

func pathKey(p []int) string { return fmt.Sprint(p) }

// executeRequest sends one turn and emits its record (see execute): it
// builds the record and the body once, then sends attempts until one is
// final (a transient warmup failure is sent again after a pause).
func (e *engine) executeRequest(l *lane, s *timing.Send, st *stream, sl *slot) execOut {
	c := e.c
	req := &st.reqs[s.Turn]
	maxTok := c.maxTokens(s, req)
	model := st.models.wire(req.Model, c.Models)
	base := e.newRecord(l, s, st, model, maxTok)
	// Build the body, once: a retried warmup request sends the same bytes.
	conv, err := e.prepareBody(s, st, sl, bodyParams{model: model, maxTokens: maxTok})
	base.PromptBytes = sl.bodyLen()

	for attempt := 1; ; attempt++ {
		rec := new(metrics.Record)
		*rec = base
		if attempt > 1 {
			// A new request: its own id, due now (after the pause).
			rec.XRequestID = uuid.NewString()
			rec.Attempt = attempt
			rec.CreditIssuedNs = e.nowNs()
		}
		errBody, seq := e.send(l, s, st, sl, rec, conv, err)
		e.classify(rec, errBody)
		if !e.retryable(s, rec, attempt) {
			return e.finalOutcome(rec, s, seq, attempt, false)
		}
		// A transient warmup failure: wait, then send the request again.
		// The failed attempt is recorded (a warmup error, counted as sent)
		// once it is known whether the retry goes out; the core sees only
		// the final outcome.
		if !e.retryPause(l, s, rec, attempt) {
			// Stopped during the pause: this failure is the final outcome.
			return e.finalOutcome(rec, s, seq, attempt, true)
		}
		rec.Retried = true
		e.emit(rec, seq)
	}
}

// maxTokens returns the max_tokens of send s of recorded request req:
// the recorded output, capped by SynthesisMaxOSL (not for a subagent's
// request), overridden by the core's (a cache-warmup request's 1), at
// least 1.
func (c *runConfig) maxTokens(s *timing.Send, req *dataset.Request) int {
	maxTok := req.Out
	if s.Plan.Streams[s.Stream].Kind != timing.SourceSubagent && c.SynthesisMaxOSL > 0 && maxTok > c.SynthesisMaxOSL {
		maxTok = c.SynthesisMaxOSL
	}
	if s.MaxTokens > 0 {
		maxTok = s.MaxTokens
	}
	return max(maxTok, 1)
}

// newRecord returns the record of send s's first attempt: what it
// replays, who sends it, its model and max_tokens, and the theoretical
// prefix-cache hits of its turn.
func (e *engine) newRecord(l *lane, s *timing.Send, st *stream, model string, maxTok int) metrics.Record {
	ps := &s.Plan.Streams[s.Stream]
	req := &st.reqs[s.Turn]
	phase := metrics.PhaseProfiling
	if s.Phase == timing.Warmup {
		phase = metrics.PhaseWarmup
	}
	rec := metrics.Record{
		SessionNum:          st.session,
		XRequestID:          uuid.NewString(),
		XCorrelationID:      st.corrID,
		ConversationID:      ps.ConvID,
		TurnIndex:           s.Turn,
		SourceTraceID:       e.c.Traces[s.Trace].ID,
		SourceOuterIdx:      ps.Turns[s.Turn].OuterIdx,
		SourceKind:          ps.Kind.String(),
		AgentDepth:          ps.Depth,
		ParentCorrelationID: st.parentCorr,
		RootCorrelationID:   st.rootCorr,
		Lane:                s.Lane,
		WorkerID:            l.workerID,
		Shard:               e.shard,
		Phase:               phase,
		Model:               model,
		MaxTokens:           maxTok,
		RecordedIn:          req.In,
		RecordedOut:         req.Out,
		CreditIssuedNs:      s.At.UnixNano(),
	}
	if h, ok := e.prefixHits(s.Trace, ps, s.Turn); ok {
		rec.HitBlocks, rec.TotalBlocks = h.Hit, h.Total
	}
	return rec
}

// prepareBody builds the body of send s into sl (with Dynamo's session
// control when configured) and returns the stream's conversation. The
// error is the failure to build the prompt: the request's error, recorded
// without sending anything.
func (e *engine) prepareBody(s *timing.Send, st *stream, sl *slot, p bodyParams) (*prompttext.Conversation, error) {
	c := e.c
	ps := &s.Plan.Streams[s.Stream]
	if ds := c.DynamoSession; ds.Enabled {
		id := st.corrID
		if st.marker != "" {
			id = ps.ConvID + ":" + st.marker
		}
		sl.session = appendSessionControl(sl.session[:0], id, ds.TimeoutSeconds, s.NewSession)
		p.session = sl.session
	}
	conv, err := st.conv.get()
	if err != nil {
		return conv, fmt.Errorf("conversation %s of trace %s: cannot build its prompts: %v", ps.ConvID, c.Traces[s.Trace].ID, err)
	}
	return conv, sl.buildBody(c, p, conv, s.Turn, st.marker)
}

// send sends one attempt of a request and fills rec with its outcome; it
// returns the error body (for classification) and the threshold sequence
// number. buildErr is the failure to build the prompt, recorded as this
// request's error without sending anything.
func (e *engine) send(l *lane, s *timing.Send, st *stream, sl *slot, rec *metrics.Record, conv *prompttext.Conversation, buildErr error) ([]byte, int) {
	c := e.c
	seq := e.sending(rec.Phase)
	defer e.returned()
	rec.RequestStartNs = e.nowNs()
	if buildErr != nil {
		// A prompt that cannot be built is this request's failure; it is
		// recorded like any other so nothing is lost silently.
		rec.RequestEndNs = rec.RequestStartNs
		rec.Error = &metrics.Error{Type: "PromptSynthesisError", Message: buildErr.Error(), Category: metrics.CategoryMalformed}
		return nil, seq
	}
	var text *[]byte
	if c.LiveAssistant {
		sl.text = sl.text[:0]
		text = &sl.text
	}
	var x exchange
	firstNs := rec.RequestStartNs
	for tries := 1; ; tries++ {
		x = e.exchange(l, st, sl, rec, text)
		if x.err == nil || x.err.Category == metrics.CategoryHTTP || x.err.Category == metrics.CategoryStreamError {
			if !e.restarting(x.err, x.errBody) {
				e.served.Store(true)
			}
		}
		if !e.restarting(x.err, x.errBody) {
			break
		}
		// The server is restarting: the same request again, after a
		// pause, until it answers or the wait is spent (restart.go).
		if !e.restartPause(s, x.err, firstNs, tries) {
			restartGaveUp(x.err, time.Duration(e.nowNs()-firstNs), tries)
			rec.RestartTries = tries
			rec.RestartWaitNs = e.nowNs() - firstNs
			break
		}
		rec.RestartTries = tries + 1
		rec.RestartWaitNs = e.nowNs() - firstNs
		if text != nil {
			*text = (*text)[:0]
		}
	}
	if rec.RestartTries > 0 {
		e.restartWaits.Add(1)
	}
	if x.fallback {
		e.respFallbacks.Add(1)
	}
	rec.RequestStartNs = firstNs
	rec.RequestAckNs = x.ackNs
	rec.FirstChunkNs, rec.SecondChunkNs, rec.FirstOutputNs, rec.LastChunkNs = x.firstNs, x.secondNs, x.firstOutputNs, x.lastNs
	rec.RequestEndNs = x.endNs
	rec.ContentChunks = x.chunks
	rec.NonStreaming = !c.Streaming
	rec.Usage = x.recordUsage()
	if c.Streaming && rec.Usage != nil && rec.Usage.CompletionTokens > x.chunks && sl.k.streamed != nil {
		// The tokens the chunks did not account for (several per chunk).
		sl.k.streamed.Add(int64(rec.Usage.CompletionTokens - x.chunks))
	}
	rec.Error = x.err
	if rec.Error == nil && rec.Usage != nil && rec.RecordedIn > 0 {
		for d := int64(rec.Usage.PromptTokens - rec.RecordedIn); ; {
			cur := e.promptOverhead.Load()
			if d <= cur || e.promptOverhead.CompareAndSwap(cur, d) {
				break
			}
		}
	}
	if rec.Error == nil && c.LiveAssistant {
		conv.SetLiveReply(s.Turn, string(sl.text))
	}
	return x.errBody, seq
}

// exchange sends the request once on the slot's connection.
func (e *engine) exchange(l *lane, st *stream, sl *slot, rec *metrics.Record, text *[]byte) exchange {
	c := e.c
	return sl.k.do(c, sl.body, sl.streamBody(), func(h *reqHeader) {
		h.Set("X-Request-ID", rec.XRequestID)
		h.Set("X-Correlation-ID", st.corrID)
		if c.SessionHeaders.XSessionID {
			h.Set("X-Session-ID", st.corrID)
		}
		if c.SessionHeaders.Dynamo {
			h.Set("X-Dynamo-Session-ID", st.corrID)
			if st.parentCorr != "" {
				h.Set("X-Dynamo-Parent-Session-ID", st.parentCorr)
			}
		}
		if c.SessionHeaders.SMG {
			h.Set("X-SMG-Routing-Key", st.corrID)
		}
	}, l.nowProgress, text)
}

// sending counts a request of phase as sent and in flight, right before
// it is written, and returns its threshold sequence number (see emit).
func (e *engine) sending(phase metrics.Phase) int {
	e.tally.Send()
	return e.thresholdSent(phase)
}

// returned counts a request's exchange as over: it is no longer in flight
// (its record follows, emit).
func (e *engine) returned() { e.tally.Returned() }

// finalOutcome records the last attempt of a request and decides what its
// failure means for the run (see judge); it returns the outcome for the
// core.
func (e *engine) finalOutcome(rec *metrics.Record, s *timing.Send, seq, attempts int, interrupted bool) execOut {
	o := e.emit(rec, seq)
	e.judge(rec, s, attempts, interrupted)
	return o
}

// classify marks a finished record's cancellation or context overflow and
// sets its Bucket, once.
func (e *engine) classify(rec *metrics.Record, errBody []byte) {
	c := e.c
	if rec.Error != nil {
		switch {
		case rec.Error.Category == metrics.CategoryCancelled:
			rec.Cancelled = true
			rec.CancellationNs = rec.RequestEndNs
		case c.Classifier.IsOverflow(errBody) || (errBody == nil && c.Classifier.IsOverflow([]byte(rec.Error.Message))):
			rec.ContextOverflow = true
		}
	}
	rec.Bucket = metrics.BucketOf(rec)
}

// emit routes a classified record to exactly one place, counts it in the
// run's tally (once: the accounting, the progress, the live view and the
// threshold read that count) and gives it to the threshold (seq is the
// request's threshold sequence number, 0 for warmup requests). A failed
// warmup attempt that is retried (Record.Retried) is recorded and counted
// as such: the request is not done.
func (e *engine) emit(rec *metrics.Record, seq int) execOut {
	c := e.c
	o := execOut{endNs: rec.RequestEndNs}
	e.tally.Add(rec)
	if rec.Phase == metrics.PhaseProfiling && rec.LastChunkNs > 0 && rec.Bucket != metrics.BucketOverflow {
		storeMax(&e.lastContentNs, rec.LastChunkNs)
	}
	switch rec.Bucket {
	case metrics.BucketOverflow:
		o.Overflow = true
	case metrics.BucketCancelled:
		o.Cancelled = true
	case metrics.BucketWarmupError, metrics.BucketProfilingError:
		o.Failed = true
	case metrics.BucketProfilingOK:
		if rec.FirstChunkNs > 0 {
			storeMax(&e.lastTTFTNs, rec.FirstChunkNs)
		}
		if c.UseServerTokenCount && rec.Usage == nil {
			e.noteMissingUsage(rec)
		}
		if rec.ContentChunks >= 2 {
			storeMax(&e.lastITLNs, rec.RequestEndNs)
		}
	}
	if o.Overflow {
		c.Overflows.Add(rec)
	} else {
		c.Sink.Add(rec)
	}
	e.thresholdDone(seq, rec)
	e.checkSink()
	return o
}

// noteMissingUsage counts a successful profiling request whose response
// had no usage under Config.UseServerTokenCount, and says so in the log
// at the first one (Result.MissingUsage): its ISL and OSL are missing,
// as in the pinned aiperf, which keeps such a record successful and warns
// that its token metrics are unavailable.
func (e *engine) noteMissingUsage(rec *metrics.Record) {
	if e.missingUsage.Add(1) == 1 && e.c.Logf != nil {
		e.c.Logf("warning: the server sent no usage for request %s (--use-server-token-count takes ISL and OSL from it): the request counts as successful, without ISL, OSL or token throughput; check that the server reports usage (streaming: stream_options.include_usage); the end of the run says how many had none", rec.XRequestID)
	}
}

// judge decides what the final failure of a request means for the run: a
// failed subagent request aborts it under AIPERF_DAG_FAIL_FAST; a root
// (depth 0) warmup request that failed (after its retries, or with an
// error that is not retried) aborts it, naming the trace and the last
// error. A child's warmup failure never does, nor one whose retries were
// cut short because the run was stopping anyway (interrupted).
func (e *engine) judge(rec *metrics.Record, s *timing.Send, attempts int, interrupted bool) {
	c := e.c
	switch {
	case c.DAGFailFast && s.Depth > 0 && (rec.Bucket == metrics.BucketProfilingError || rec.Bucket == metrics.BucketWarmupError):
		e.abort(AbortSubagentFailed, fmt.Sprintf("subagent request failed (%s turn %d of trace %s): %s: %s; AIPERF_DAG_FAIL_FAST=true aborts the run on the first failed subagent request",
			s.Plan.Streams[s.Stream].ConvID, s.Turn, c.Traces[s.Trace].ID, rec.Error.Type, rec.Error.Message))
	case rec.Bucket == metrics.BucketWarmupError && s.Depth == 0 && !interrupted:
		tr := &c.Traces[s.Trace]
		why := "not retried: " + notTransientReason(rec.Error)
		if transient(rec.Error) {
			why = fmt.Sprintf("the last of %d attempts (the retry budget is spent)", attempts)
		}
		e.abort(AbortWarmupFailed, fmt.Sprintf("warmup request failed on lane %d (trace %s, %s turn %d; %s): %s%s: %s; the server must answer warmup requests before profiling can start — check the server log",
			s.Lane, tr.ID, s.Plan.Streams[s.Stream].ConvID, s.Turn, why, codePrefix(rec.Error.Code), rec.Error.Type, rec.Error.Message))
	}
}

func codePrefix(code int) string {
	if code == 0 {
		return ""
	}
	return fmt.Sprintf("%d ", code)
}
