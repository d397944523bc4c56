package replay

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/dataset/synth"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
)

// Abort reasons reported in Result.Aborted.
const (
	AbortFailedRequestThreshold = "failed_request_threshold"
	AbortWarmupFailed           = "warmup_failed"
	AbortWarmupTimeout          = "warmup_timeout"
)

// Result summarises a replay. Records went to Config.Sink as they finished;
// Result carries what they cannot: phases, accounting and why the run ended.
type Result struct {
	BenchmarkID    string
	StartTime      time.Time // Run started
	WarmupStart    time.Time
	ProfilingStart time.Time // zero when profiling never started
	Deadline       time.Time // ProfilingStart + BenchmarkDuration
	ProfilingEnd   time.Time // last profiling request finished
	EndTime        time.Time
	// Accounting counts every request sent and where it went.
	Accounting metrics.Accounting
	// Cancelled is true when ctx was cancelled (a signal) before the end.
	Cancelled bool
	// Aborted names why the run stopped early ("" = it ran to the end).
	Aborted string
	// AbortMessage is the human-readable reason.
	AbortMessage string
	// SkippedSubagentRequests counts subagent requests in the corpus that
	// this version does not replay (DESIGN.md: subagents are counted).
	SkippedSubagentRequests int
	// ProfilingOverflows counts context overflows among profiling requests
	// (the overflow-rate numerator; Accounting.Overflows counts all phases).
	ProfilingOverflows int
	// LastTTFT and LastITL are when the last successful profiling request
	// with a TTFT (a first content chunk) and with an ITL (two or more
	// chunks) got its first / last chunk: the coverage rule's inputs.
	LastTTFT, LastITL time.Time
	// StartTurns is k_i per lane.
	StartTurns []int
	// Scheduler statistics.
	Schedule timing.Stats
}

// Run replays c.Traces against c.URL and streams every record to c.Sink.
// It returns an error only when the replay cannot start (invalid config,
// no usable trace); a run that starts always returns a Result, also when it
// was cancelled through ctx or aborted, so the caller can write artifacts.
func Run(ctx context.Context, c Config) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg := c.withDefaults()
	if cfg.BenchmarkID == "" {
		cfg.BenchmarkID = uuid.NewString()
	}
	if cfg.Classifier == nil {
		cfg.Classifier = scenario.DefaultClassifier()
	}
	e := &engine{c: &cfg, base: time.Now(), stopIssuing: make(chan struct{}), kill: make(chan struct{})}
	e.res.BenchmarkID = cfg.BenchmarkID
	e.res.StartTime = e.base

	cap := cfg.InterTurnDelayCap
	if cap < 0 {
		cap = 0
	}
	infos := make([]timing.TraceInfo, len(cfg.Traces))
	for i := range cfg.Traces {
		infos[i] = timing.FromTrace(&cfg.Traces[i], cap)
		e.res.SkippedSubagentRequests += cfg.Traces[i].NumSubagentRequests()
	}
	sched, err := timing.New(timing.Config{
		Lanes:    cfg.Concurrency,
		Seed:     cfg.Seed,
		MinRatio: cfg.StartMinRatio,
		MaxRatio: cfg.StartMaxRatio,
		Duration: cfg.BenchmarkDuration,
	}, infos)
	if err != nil {
		return nil, err
	}
	e.sched = sched
	e.hits = make([]hitsOnce, len(cfg.Traces))
	e.threshold = scenario.NewThreshold(cfg.FailedRequestThreshold, cfg.Concurrency)
	if e.res.SkippedSubagentRequests > 0 {
		cfg.Logf("subagent replay is not supported yet: skipping %d subagent requests", e.res.SkippedSubagentRequests)
	}

	e.lanes = make([]*lane, cfg.Concurrency)
	for i := range e.lanes {
		k, err := newConn(&cfg, cfg.RequestTimeout)
		if err != nil {
			return nil, err
		}
		e.lanes[i] = &lane{idx: i, k: k, workerID: fmt.Sprintf("lane_%04d", i)}
		e.res.StartTurns = append(e.res.StartTurns, sched.StartTurn(i))
	}
	defer func() {
		for _, l := range e.lanes {
			l.k.close()
		}
	}()
	// Kill in-flight requests when told to.
	go func() {
		<-e.kill
		for _, l := range e.lanes {
			l.k.abort()
		}
	}()
	// A cancelled ctx stops issuing and, after the grace period, kills.
	stopWatch := context.AfterFunc(ctx, func() {
		e.mu.Lock()
		e.res.Cancelled = true
		e.mu.Unlock()
		e.stop()
		time.AfterFunc(cfg.GracePeriod, e.killAll)
	})
	defer stopWatch()

	e.warmup()
	if !e.stopped() {
		e.profile()
	}
	e.killAll() // nothing may outlive Run
	e.res.EndTime = time.Now()
	e.res.Accounting = e.accounting()
	e.res.ProfilingOverflows = int(e.profOverflows.Load())
	if ns := e.lastTTFTNs.Load(); ns > 0 {
		e.res.LastTTFT = time.Unix(0, ns)
	}
	if ns := e.lastITLNs.Load(); ns > 0 {
		e.res.LastITL = time.Unix(0, ns)
	}
	e.res.Schedule = sched.Stats()
	return &e.res, nil
}

type hitsOnce struct {
	once sync.Once
	hits []dataset.HitCount
}

type engine struct {
	c         *Config
	sched     *timing.Scheduler
	base      time.Time
	lanes     []*lane
	hits      []hitsOnce
	threshold *scenario.Threshold

	mu  sync.Mutex // guards res, threshold
	res Result

	stopOnce, killOnce sync.Once
	stopIssuing        chan struct{}
	kill               chan struct{}
	sessionSeq         atomic.Int64
	warmOverflow       []bool

	sent, profOK, profErr, warmOK, warmErr, overflows, cancelled atomic.Int64
	profOverflows                                                atomic.Int64
	lastTTFTNs, lastITLNs                                        atomic.Int64
}

// lane is the state owned by one lane goroutine.
type lane struct {
	idx      int
	workerID string
	k        *conn
	body     []byte
	sess     *session
	text     []byte
}

// session is one play of a trace on a lane.
type session struct {
	num     int
	corrID  string
	marker  string
	trace   int
	conv    *synth.Conversation
	convErr error // why conv is nil
	models  modelMap
}

func (e *engine) nowNs() int64 { return e.base.UnixNano() + int64(time.Since(e.base)) }

func (e *engine) stop()    { e.stopOnce.Do(func() { close(e.stopIssuing) }) }
func (e *engine) killAll() { e.stop(); e.killOnce.Do(func() { close(e.kill) }) }
func (e *engine) stopped() bool {
	select {
	case <-e.stopIssuing:
		return true
	default:
		return false
	}
}

func (e *engine) abort(reason, msg string) {
	e.mu.Lock()
	if e.res.Aborted == "" {
		e.res.Aborted, e.res.AbortMessage = reason, msg
		e.c.Logf("%s", msg)
	}
	e.mu.Unlock()
	e.killAll()
}

func (e *engine) accounting() metrics.Accounting {
	return metrics.Accounting{
		Sent:            int(e.sent.Load()),
		ProfilingOK:     int(e.profOK.Load()),
		ProfilingErrors: int(e.profErr.Load()),
		WarmupOK:        int(e.warmOK.Load()),
		WarmupErrors:    int(e.warmErr.Load()),
		Overflows:       int(e.overflows.Load()),
		Cancelled:       int(e.cancelled.Load()),
	}
}

// warmup sends turn k_i on every lane at once and waits for all of them.
func (e *engine) warmup() {
	sends := e.sched.Warmup()
	now := time.Now()
	e.res.WarmupStart = now
	e.c.Progress.WarmupTotal.Store(int64(len(sends)))
	if e.c.Observer != nil {
		e.c.Observer.WarmupStarted(len(sends), now)
	}
	var timeout *time.Timer
	if e.c.WarmupGracePeriod > 0 {
		timeout = time.AfterFunc(e.c.WarmupGracePeriod, func() {
			e.abort(AbortWarmupTimeout, fmt.Sprintf("warmup did not finish within --warmup-grace-period %s; in-flight warmup requests were cancelled", e.c.WarmupGracePeriod))
		})
	}
	var wg sync.WaitGroup
	overflowed := make([]bool, len(e.lanes))
	for _, s := range sends {
		wg.Add(1)
		go func(s timing.Send) {
			defer wg.Done()
			if e.stopped() {
				return
			}
			o := e.execute(e.lanes[s.Lane], s, metrics.PhaseWarmup)
			overflowed[s.Lane] = o.Overflow
			if o.Failed && !o.Overflow && !o.cancelled {
				tr := &e.c.Traces[s.Trace]
				e.abort(AbortWarmupFailed, fmt.Sprintf("warmup request failed on lane %d (trace %s, turn %d): %s; the server must answer warmup requests before profiling can start — check the server log", s.Lane, tr.ID, s.Turn, o.msg))
			}
		}(s)
	}
	wg.Wait()
	if timeout != nil {
		timeout.Stop()
	}
	e.warmOverflow = overflowed
}

// profile runs the profiling phase until every lane is done.
func (e *engine) profile() {
	now := time.Now()
	sends := e.sched.StartProfiling(now)
	e.res.ProfilingStart = now
	e.res.Deadline = e.sched.Deadline()
	if e.c.Observer != nil {
		e.c.Observer.ProfilingStarted(now, e.res.Deadline)
	}
	// After the deadline and the grace period, in-flight requests are cancelled.
	graceTimer := time.AfterFunc(time.Until(e.res.Deadline)+e.c.GracePeriod, e.killAll)
	defer graceTimer.Stop()

	var wg sync.WaitGroup
	for _, s := range sends {
		wg.Add(1)
		go func(s timing.Send) {
			defer wg.Done()
			e.runLane(e.lanes[s.Lane], s)
		}(s)
	}
	wg.Wait()
	e.res.ProfilingEnd = time.Now()
	if e.c.Observer != nil {
		e.c.Observer.ProfilingEnded(e.res.ProfilingEnd)
	}
}

// sendSpinAhead is how early a lane's timer fires before its send time.
// Go's netpoller sleeps in whole milliseconds, so a timer alone fires up
// to ~1 ms late when the process is otherwise idle (bench/run measured a
// 0.6 ms median lateness); the lane covers the last stretch by yielding
// (runtime.Gosched), which runs any other ready goroutine first and costs
// CPU only while nothing else is ready.
const sendSpinAhead = time.Millisecond

func (e *engine) runLane(l *lane, s timing.Send) {
	if e.warmOverflow != nil && e.warmOverflow[l.idx] {
		// The warmup turn already overflowed the context: the session ends
		// and the lane recycles without sending the rest of it.
		next, ok := e.sched.Next(l.idx, timing.Outcome{Overflow: true}, time.Now())
		if !ok {
			return
		}
		s = next
	}
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for {
		if d := time.Until(s.At); d > 0 {
			if d > sendSpinAhead {
				timer.Reset(d - sendSpinAhead)
				select {
				case <-timer.C:
				case <-e.stopIssuing:
					return
				}
			}
			// The last stretch: yield until the send time (see sendSpinAhead).
			for time.Now().Before(s.At) {
				if e.stopped() {
					return
				}
				runtime.Gosched()
			}
		} else if e.stopped() {
			return
		}
		o := e.execute(l, s, metrics.PhaseProfiling)
		if o.cancelled {
			return
		}
		next, ok := e.sched.Next(l.idx, timing.Outcome{Overflow: o.Overflow, Failed: o.Failed}, time.Now())
		if !ok {
			return
		}
		s = next
	}
}

type outcome struct {
	Overflow, Failed, cancelled bool
	msg                         string
}

func (e *engine) prefixHits(trace int) []dataset.HitCount {
	h := &e.hits[trace]
	h.once.Do(func() { h.hits = dataset.PrefixHits(&e.c.Traces[trace]) })
	return h.hits
}

// execute sends one turn and emits its record.
func (e *engine) execute(l *lane, s timing.Send, phase metrics.Phase) outcome {
	c := e.c
	tr := &c.Traces[s.Trace]
	if s.NewSession || l.sess == nil || l.sess.trace != s.Trace {
		conv, err := c.Synth.Conversation(tr)
		l.sess = &session{
			num:    int(e.sessionSeq.Add(1)) - 1,
			corrID: uuid.NewString(),
			trace:  s.Trace,
			conv:   conv,
			models: newModelMap(tr, c.Models),
		}
		if c.CacheBust != scenario.CacheBustNone && c.CacheBust != "" {
			l.sess.marker = scenario.Marker(c.BenchmarkID, s.RecyclePass, s.Lane, tr.ID)
		}
		if err != nil {
			c.Logf("trace %s: cannot build its conversation: %v", tr.ID, err)
			l.sess.convErr = err
		}
	}
	sess := l.sess
	req := &tr.Requests[s.Turn]
	maxTok := req.Out
	if c.SynthesisMaxOSL > 0 && maxTok > c.SynthesisMaxOSL {
		maxTok = c.SynthesisMaxOSL
	}
	if maxTok < 1 {
		maxTok = 1
	}
	model := sess.models.wire(req.Model, c.Models)
	hits := e.prefixHits(s.Trace)
	rec := &metrics.Record{
		SessionNum:        sess.num,
		XRequestID:        uuid.NewString(),
		XCorrelationID:    sess.corrID,
		ConversationID:    tr.ID,
		TurnIndex:         s.Turn,
		SourceTraceID:     tr.ID,
		SourceOuterIdx:    s.Turn,
		SourceKind:        "weka_main",
		RootCorrelationID: sess.corrID,
		Lane:              s.Lane,
		WorkerID:          l.workerID,
		Phase:             phase,
		Model:             model,
		MaxTokens:         maxTok,
		RecordedIn:        req.In,
		RecordedOut:       req.Out,
	}
	if s.Turn < len(hits) {
		rec.HitBlocks, rec.TotalBlocks = hits[s.Turn].Hit, hits[s.Turn].Total
	}
	if s.At.IsZero() {
		rec.CreditIssuedNs = e.nowNs()
	} else {
		rec.CreditIssuedNs = s.At.UnixNano()
	}

	// Build the body.
	p := bodyParams{model: model, maxTokens: maxTok}
	body := appendBodyHead(l.body[:0], p)
	var err error
	if sess.conv == nil {
		err = fmt.Errorf("trace %s: cannot build its prompts: %v", tr.ID, sess.convErr)
	} else {
		body, err = sess.conv.AppendMessagesJSONAt(body, s.Turn, sess.marker, markerPlacement(c.CacheBust))
	}
	body = appendBodyTail(body, c, p)
	l.body = body
	rec.PromptBytes = len(body)

	e.sent.Add(1)
	c.Progress.Sent.Add(1)
	c.Progress.InFlight.Add(1)
	defer c.Progress.InFlight.Add(-1)
	rec.RequestStartNs = e.nowNs()
	if err != nil {
		// A prompt that cannot be built is this request's failure; it is
		// recorded like any other so nothing is lost silently.
		rec.RequestEndNs = rec.RequestStartNs
		rec.Error = &metrics.Error{Type: "PromptSynthesisError", Message: err.Error(), Category: metrics.CategoryMalformed}
		return e.emit(rec, phase, nil)
	}
	var text *[]byte
	if c.LiveAssistant {
		l.text = l.text[:0]
		text = &l.text
	}
	x := l.k.do(c, body, func(h *fasthttp.RequestHeader) {
		h.Set("X-Request-ID", rec.XRequestID)
		h.Set("X-Correlation-ID", sess.corrID)
		if c.SessionHeaders.XSessionID {
			h.Set("X-Session-ID", sess.corrID)
		}
		if c.SessionHeaders.Dynamo {
			h.Set("X-Dynamo-Session-ID", sess.corrID)
		}
		if c.SessionHeaders.SMG {
			h.Set("X-SMG-Routing-Key", sess.corrID)
		}
	}, e.nowNs, text)
	rec.RequestAckNs = x.ackNs
	rec.FirstChunkNs, rec.SecondChunkNs, rec.FirstOutputNs, rec.LastChunkNs = x.firstNs, x.secondNs, x.firstOutputNs, x.lastNs
	rec.RequestEndNs = x.endNs
	rec.ContentChunks = x.chunks
	rec.Usage = x.usage
	rec.Error = x.err
	if rec.Error == nil && rec.Usage == nil && c.UseServerTokenCount {
		rec.Error = &metrics.Error{Type: "MissingUsage", Category: metrics.CategoryMissingUsage,
			Message: "the response carried no usage although --use-server-token-count needs it for ISL/OSL (is stream_options.include_usage supported by the server?)"}
	}
	if rec.Error == nil && c.LiveAssistant {
		sess.conv.SetLiveReply(s.Turn, string(l.text))
	}
	return e.emit(rec, phase, x.errBody)
}

// emit classifies a finished record, routes it to exactly one place and
// updates the accounting and the threshold.
func (e *engine) emit(rec *metrics.Record, phase metrics.Phase, errBody []byte) outcome {
	c := e.c
	var o outcome
	switch {
	case rec.Error == nil:
	case rec.Error.Category == metrics.CategoryCancelled:
		rec.Cancelled = true
		rec.CancellationNs = rec.RequestEndNs
		o.cancelled, o.Failed = true, true
	case c.Classifier.IsOverflow(errBody) || (errBody == nil && c.Classifier.IsOverflow([]byte(rec.Error.Message))):
		rec.ContextOverflow = true
		o.Overflow = true
	default:
		o.Failed = true
	}
	if rec.Error != nil {
		o.msg = fmt.Sprintf("%s: %s", rec.Error.Type, rec.Error.Message)
	}
	switch {
	case o.Overflow:
		e.overflows.Add(1)
		if phase == metrics.PhaseProfiling {
			e.profOverflows.Add(1)
		}
		c.Progress.Overflows.Add(1)
		c.Overflows.Add(rec)
		return o
	case o.cancelled:
		e.cancelled.Add(1)
	case phase == metrics.PhaseWarmup && o.Failed:
		e.warmErr.Add(1)
	case phase == metrics.PhaseWarmup:
		e.warmOK.Add(1)
	case o.Failed:
		e.profErr.Add(1)
	default:
		e.profOK.Add(1)
		if rec.FirstChunkNs > 0 {
			storeMax(&e.lastTTFTNs, rec.FirstChunkNs)
		}
		if rec.ContentChunks >= 2 {
			storeMax(&e.lastITLNs, rec.LastChunkNs)
		}
	}
	if o.Failed {
		c.Progress.Errors.Add(1)
	}
	if phase == metrics.PhaseWarmup {
		c.Progress.WarmupDone.Add(1)
	} else {
		c.Progress.ProfilingDone.Add(1)
	}
	c.Sink.Add(rec)
	if phase == metrics.PhaseProfiling && !o.cancelled {
		e.mu.Lock()
		abort, msg := e.threshold.Observe(o.Failed)
		e.mu.Unlock()
		if abort {
			e.abort(AbortFailedRequestThreshold, msg)
		}
	}
	return o
}

// storeMax raises v to n if n is larger.
func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}
