package replay

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/plan"
	"github.com/agentperf/agentperf/timing"
)

// Abort reasons reported in Result.Aborted.
const (
	AbortFailedRequestThreshold = "failed_request_threshold"
	AbortWarmupFailed           = "warmup_failed"
	AbortWarmupTimeout          = "warmup_timeout"
	AbortSubagentFailed         = "subagent_failed"
)

// Result summarises a replay. Records went to Config.Sink as they finished;
// Result carries what they cannot: phases, accounting and why the run ended.
type Result struct {
	BenchmarkID string
	// Generation is the AgentX generation replayed.
	Generation     timing.Generation
	StartTime      time.Time // Run started
	WarmupStart    time.Time
	ProfilingStart time.Time // zero when profiling never started
	Deadline       time.Time // ProfilingStart + BenchmarkDuration
	ProfilingEnd   time.Time // last profiling request finished
	EndTime        time.Time
	// ProfilingUserCPU and ProfilingSystemCPU are the CPU time the whole
	// process spent from ProfilingStart to ProfilingEnd (getrusage): the
	// client's cost of the profiling phase, start-up, warmup and the
	// artifacts left out; with a server in the same process (sim://) its
	// cost too. Both zero where the platform has no getrusage.
	ProfilingUserCPU, ProfilingSystemCPU time.Duration
	// EndedEarly is set when every lane was done before the deadline
	// (nothing left to send); EndReason says why profiling ended.
	EndedEarly bool
	EndReason  string
	// Accounting counts every request sent and where it went.
	Accounting metrics.Accounting
	// Cancelled is true when ctx was cancelled (a signal) before the end.
	Cancelled bool
	// Killed is true when Config.KillNow was closed (a second signal): the
	// requests in flight then were cancelled at once, without the grace
	// period. Cancelled is set too.
	Killed bool
	// Terminated is the cause of the cancel when ctx was cancelled with a
	// *Terminated (a job scheduler's SIGTERM); nil otherwise.
	Terminated *Terminated
	// Aborted names why the run stopped early ("" = it ran to the end).
	Aborted string
	// AbortMessage is the human-readable reason.
	AbortMessage string
	// SkippedSubagentRequests counts subagent requests in the corpus that
	// the generation does not replay (v0.2 only).
	SkippedSubagentRequests int
	// Subagents describes the subagent replay (v0.3 and later).
	Subagents SubagentStats
	// Flat counts the top-level chains replayed as streams of their
	// root's tree (v1.0's chain layout): Traces split, Chains, their
	// Requests and Branches.
	Flat struct{ Traces, Chains, Requests, Branches int }
	// ProfilingOverflows and WarmupOverflows count context overflows per
	// phase (Accounting.Overflows counts both).
	ProfilingOverflows, WarmupOverflows int
	// ResponseFallbacks counts the responses (a non-streaming body, or a
	// stream with at least one such event) that the one-pass scanner could
	// not decide and encoding/json decoded instead: malformed or unusual
	// JSON. The well-formed responses of the servers replayed against
	// (vLLM, SGLang, Dynamo, llm-d-inference-sim, package sim) count 0.
	ResponseFallbacks int
	// PromptOverheadMax is the largest number of prompt tokens the server
	// counted beyond the trace's recorded `in` (usage prompt_tokens −
	// Record.RecordedIn) over the successful requests with usage: what
	// the chat template and the server's tokenizer add to a prompt. 0
	// without usage (or when the server never counted more).
	PromptOverheadMax int
	// MissingUsage counts the successful profiling requests whose
	// response had no usage object under Config.UseServerTokenCount:
	// they have no ISL, OSL or token throughput (the pinned aiperf keeps
	// them successful and warns; package run makes it a warning of
	// the run).
	MissingUsage int
	// WarmupRetries counts failed warmup attempts that were sent again
	// (each is a warmup-error record; Config.WarmupRetries).
	WarmupRetries int
	// ServerRestartWaits counts the requests that were sent again while
	// the server was restarting (HTTP 503 "Loading model", or a refused
	// connection after it had answered; Config.ServerRestartWait).
	ServerRestartWaits int
	// LastTTFT and LastITL are when the last successful profiling request
	// with a TTFT (a first content chunk) and with an ITL (two or more
	// chunks) got its first / last chunk: the coverage rule's inputs.
	LastTTFT, LastITL time.Time
	// LastContent is the last streamed content (a chunk with content or
	// reasoning) of any profiling request, whatever its outcome: a
	// request cancelled at the end of the grace period still shows that
	// the server was streaming. The coverage rule's third signal.
	LastContent time.Time
	// StartTurns is the legacy start turn k_i per lane.
	StartTurns []int
	// Schedule is the replay core's statistics.
	Schedule timing.Stats
}

// SubagentStats counts what was done with the corpus's subagents.
type SubagentStats struct {
	// Branches and Children are the branches and child streams in the
	// plans of the corpus; Requests their requests.
	Branches, Children, Requests int
	// Dropped counts subagent entries left out because no parent request
	// precedes them, DroppedRequests their requests.
	Dropped, DroppedRequests int
	// Spawned and Started count branches spawned and children started
	// during the run; Sent the child requests sent; Cut the turns (of
	// every stream) never sent because the duration ended first.
	Spawned, Started, Sent, Cut int
	// SpawnedAtStart and StartedAtStart count the branches and child
	// streams already under way at the lanes' start states (a t* snapshot
	// or start turn inside a recorded subagent): their requests are among
	// Sent, their spawns are not among Spawned and Started.
	SpawnedAtStart, StartedAtStart int
}

// Run replays c.Traces against c.URL and streams every record to c.Sink.
// It returns an error only when the replay cannot start (invalid config,
// no usable trace); a run that starts always returns a Result, also when it
// was cancelled through ctx or aborted, so the caller can write artifacts.
func Run(ctx context.Context, c Config) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	e, err := newEngine(c.normalize())
	if err != nil {
		return nil, err
	}
	// The watchers stop when Run returns, after the result is read, in
	// the reverse of the order they started: the coordinator and the
	// KillNow watch first, then the ctx watch, then the lanes' connections
	// close, the liveness log last.
	stop := e.startWatchers(ctx)
	defer stop.run()
	e.run()
	e.killAll() // nothing may outlive Run
	e.requests.Wait()
	e.res.EndTime = time.Now()
	e.readCounts()
	return &e.res, nil
}

// newEngine plans cfg's traces, builds the replay core and the lanes, and
// logs what the plans replay.
func newEngine(cfg *runConfig) (*engine, error) {
	e := &engine{c: cfg, tally: &cfg.Progress.Tally, base: time.Now(), stopIssuing: make(chan struct{}), kill: make(chan struct{})}
	e.res.BenchmarkID = cfg.BenchmarkID
	e.res.Generation = cfg.Generation
	e.res.StartTime = e.base
	nudge := make(chan struct{})
	e.nudge.Store(&nudge)

	plans := BuildPlans(&cfg.Config)
	e.reqs = make([][][]dataset.Request, len(plans))
	for i, p := range plans {
		e.addPlan(i, p)
	}
	sched, err := timing.New(cfg.timingConfig(), plans)
	if err != nil {
		return nil, err
	}
	e.sched = sched
	e.logPlans()
	e.hits = make([]hitsOnce, len(cfg.Traces))
	e.newLanes()
	if fs, ok := cfg.Sink.(FallibleSink); ok {
		e.sinkErr = fs
	}
	return e, nil
}

// addPlan keeps the recorded requests of plan p of trace i and counts its
// skipped and dropped subagents, its branches and its child streams.
func (e *engine) addPlan(i int, p *timing.Plan) {
	e.reqs[i] = make([][]dataset.Request, len(p.Streams))
	for si := range p.Streams {
		e.reqs[i][si] = plan.Requests(&e.c.Traces[i], &p.Streams[si])
	}
	e.res.SkippedSubagentRequests += p.SkippedRequests
	e.res.Subagents.Dropped += p.DroppedSubagents
	e.res.Subagents.DroppedRequests += p.DroppedRequests
	for i := range p.Branches {
		if b := &p.Branches[i]; len(b.Children) > 0 && p.Streams[b.Children[0]].Kind == timing.SourceFlat {
			e.res.Flat.Branches++
		} else {
			e.res.Subagents.Branches++
		}
	}
	split := false
	for i := 1; i < len(p.Streams); i++ {
		if p.Streams[i].Kind == timing.SourceFlat {
			e.res.Flat.Chains++
			e.res.Flat.Requests += len(p.Streams[i].Turns)
			split = true
			continue
		}
		e.res.Subagents.Children++
		e.res.Subagents.Requests += len(p.Streams[i].Turns)
	}
	if split {
		e.res.Flat.Traces++
	}
}

// logPlans logs the flat chains and the subagents the plans replay.
func (e *engine) logPlans() {
	cfg := e.c
	if e.res.Flat.Chains > 0 {
		cfg.Logf("session layout: %d traces split into %d flat chains (%d top-level requests, %d branches) replayed beside their roots",
			e.res.Flat.Traces, e.res.Flat.Chains, e.res.Flat.Requests, e.res.Flat.Branches)
	}
	switch {
	case e.res.SkippedSubagentRequests > 0:
		cfg.Logf("%s replays parent requests only: skipping %d subagent requests", cfg.Generation, e.res.SkippedSubagentRequests)
	case e.res.Subagents.Children > 0:
		cfg.Logf("subagents: %d branches with %d child streams (%d requests) replayed as session trees; %d subagents (%d requests) dropped: no parent request precedes them",
			e.res.Subagents.Branches, e.res.Subagents.Children, e.res.Subagents.Requests, e.res.Subagents.Dropped, e.res.Subagents.DroppedRequests)
	}
}

// newLanes makes the engine's side of every lane of the core.
func (e *engine) newLanes() {
	e.lanes = make([]*lane, e.sched.Lanes())
	if e.c.Shard.Sharded() {
		e.shard = e.c.Shard.String()
	}
	for i := range e.lanes {
		// The shard's lanes in global order; a lane is named by its global
		// index.
		tl := e.sched.Lane(i)
		g := tl.Index()
		l := &lane{idx: g, tl: tl, workerID: fmt.Sprintf("lane_%04d", g), done: make(chan completion, 8), trees: map[int64]*treeState{}}
		l.nowProgress = l.progressClock(e)
		e.lanes[i] = l
		e.res.StartTurns = append(e.res.StartTurns, tl.StartTurn())
	}
}

// stops are the undo steps of the watchers Run starts, in start order.
type stops []func()

// run runs the steps in reverse order, the last started first.
func (s stops) run() {
	for i := len(s) - 1; i >= 0; i-- {
		s[i]()
	}
}

// startWatchers starts what watches the run beside the lanes: the
// liveness log, the kill of every slot, the cancel of ctx, Config.KillNow
// and the coordinator. It returns how to stop them.
func (e *engine) startWatchers(ctx context.Context) stops {
	cfg := e.c
	var s stops
	if cfg.LivenessInterval > 0 {
		done := make(chan struct{})
		s = append(s, func() { close(done) })
		go e.watchLiveness(cfg.LivenessInterval, done)
	}
	s = append(s, e.closeSlots)
	go e.abortOnKill()
	stopWatch := context.AfterFunc(ctx, func() { e.onCancel(ctx) })
	s = append(s, func() { stopWatch() })
	if cfg.KillNow != nil {
		runDone := make(chan struct{})
		s = append(s, func() { close(runDone) })
		go e.watchKillNow(runDone)
	}
	if cfg.Coordinator != nil {
		done := make(chan struct{})
		s = append(s, func() { close(done) })
		go e.coordinate(done)
	}
	return s
}

// closeSlots closes every lane's connections when Run returns.
func (e *engine) closeSlots() {
	for _, l := range e.lanes {
		l.closeSlots()
	}
}

// abortOnKill aborts the requests in flight when the run is killed.
func (e *engine) abortOnKill() {
	<-e.kill
	for _, l := range e.lanes {
		l.abortSlots()
	}
}

// onCancel handles a cancelled ctx: it stops issuing and, after the
// grace period (or the shorter bound of a *Terminated cause), kills.
func (e *engine) onCancel(ctx context.Context) {
	cfg := e.c
	grace := cfg.GracePeriod
	var term *Terminated
	if errors.As(context.Cause(ctx), &term) && term.Grace < grace {
		grace = max(term.Grace, 0)
	}
	e.mu.Lock()
	e.res.Cancelled = true
	if term != nil {
		// The grace in force: the cause's bound, or a shorter
		// GracePeriod.
		e.res.Terminated = &Terminated{Signal: term.Signal, Grace: grace}
	}
	e.mu.Unlock()
	if co := cfg.Coordinator; co != nil && !e.fromPeer.Load() {
		go co.Abort("interrupted", fmt.Sprintf("shard %s was interrupted", cfg.Shard))
	}
	e.stop()
	time.AfterFunc(grace, e.killAll)
}

// watchKillNow kills the run at once when Config.KillNow is closed before
// runDone.
func (e *engine) watchKillNow(runDone <-chan struct{}) {
	select {
	case <-e.c.KillNow:
		e.mu.Lock()
		e.res.Cancelled, e.res.Killed = true, true
		e.mu.Unlock()
		e.killAll()
	case <-runDone:
	}
}

// readCounts fills the result from the run's tally, the engine's counters
// and the core's statistics, once every request has ended.
func (e *engine) readCounts() {
	counts := e.tally.Counts()
	e.res.Accounting = counts.Accounting()
	e.res.ProfilingOverflows = counts.Profiling.Overflows
	e.res.WarmupOverflows = counts.Warmup.Overflows
	e.res.WarmupRetries = counts.Warmup.Retried
	e.res.ServerRestartWaits = int(e.restartWaits.Load())
	e.res.ResponseFallbacks = int(e.respFallbacks.Load())
	e.res.PromptOverheadMax = int(e.promptOverhead.Load())
	e.res.MissingUsage = int(e.missingUsage.Load())
	if ns := e.lastTTFTNs.Load(); ns > 0 {
		e.res.LastTTFT = time.Unix(0, ns)
	}
	if ns := e.lastITLNs.Load(); ns > 0 { // an ITL observation is a response's end
		e.res.LastITL = time.Unix(0, ns)
	}
	if ns := e.lastContentNs.Load(); ns > 0 {
		e.res.LastContent = time.Unix(0, ns)
	}
	st := e.sched.Stats()
	e.res.Schedule = st
	e.res.Subagents.Spawned, e.res.Subagents.Started, e.res.Subagents.Sent, e.res.Subagents.Cut = st.BranchesSpawned, st.ChildrenStarted, st.ChildSent, st.Cut
	e.res.Subagents.SpawnedAtStart, e.res.Subagents.StartedAtStart = st.BranchesAtStart, st.ChildrenAtStart
}

// BuildPlans returns the replay plans Run builds for c: plan.Build of
// c.Traces with c's Generation, InterTurnDelayCap, TraceIdleGapCap and
// Chains, the only fields a plan depends on (Run normalises none of them).
func BuildPlans(c *Config) []*timing.Plan {
	return plan.Build(c.Traces, plan.Options{PlanOptions: timing.PlanOptions{Generation: c.Generation, InterTurnDelayCap: c.InterTurnDelayCap, IdleGapCap: c.TraceIdleGapCap}, Chains: &c.Chains})
}

type hitsOnce struct {
	once      sync.Once
	parent    []dataset.HitCount
	subagent  []dataset.HitCount
	subOffset map[string]int // subagent path key → depth-first offset
}

type engine struct {
	c *runConfig
	// tally is the run's one count of its requests (Config.Progress's):
	// sending and returned count a request sent and in flight, emit every
	// record; Result.Accounting is read from it.
	tally *metrics.Tally
	// shard is the shard's "I/N" for the records ("" when unsharded).
	shard string
	sched *timing.Schedule
	base  time.Time
	lanes []*lane
	hits  []hitsOnce
	// reqs are the recorded requests of every stream of every plan, in
	// turn order (plan.Requests): reqs[trace][stream][turn].
	reqs [][][]dataset.Request

	mu  sync.Mutex // guards res
	res Result

	stopOnce, killOnce sync.Once
	stopIssuing        chan struct{}
	kill               chan struct{}
	// nudge is closed (and replaced) when the schedule's global offset
	// moves: every lane recomputes its wake-up.
	nudge       atomic.Pointer[chan struct{}]
	nudgeMu     sync.Mutex
	globalShift atomic.Int64
	// requests counts request goroutines.
	requests sync.WaitGroup

	lastTTFTNs, lastITLNs, lastContentNs atomic.Int64
	// warmRetriesLogged counts the warmup retries logged one by one (the
	// tally counts the retried attempts).
	warmRetriesLogged atomic.Int64
	// served is set once the server has answered (an HTTP status, or a
	// stream); restartsLogged counts the restart waits logged one by one,
	// restartWaits the requests that waited for a restarting server
	// (restart.go).
	served                       atomic.Bool
	restartsLogged, restartWaits atomic.Int64
	// respFallbacks counts responses decoded with encoding/json
	// (Result.ResponseFallbacks).
	respFallbacks atomic.Int64
	// promptOverhead is the largest usage prompt_tokens − recorded `in`
	// of a successful request (Result.PromptOverheadMax).
	promptOverhead atomic.Int64
	// missingUsage counts successful profiling requests without usage
	// under Config.UseServerTokenCount (Result.MissingUsage).
	missingUsage atomic.Int64
	// sinkErr is Config.Sink when it can fail; sinkFailed is set on its
	// first error.
	sinkErr    FallibleSink
	sinkFailed atomic.Bool
	// fromPeer is set when the run was stopped by another shard, so the
	// stop is not passed back.
	fromPeer atomic.Bool
}

// lane is the state owned by one lane goroutine.
type lane struct {
	idx      int
	workerID string
	tl       *timing.Lane
	done     chan completion
	sends    []timing.Send
	// trees holds the engine's state of the lane's live trees; live is
	// scratch for pruning it.
	trees map[int64]*treeState
	live  []int64
	// lastProgress is the engine time (ns) of the lane's latest response
	// event; nowProgress reads the clock and stores it there (liveness.go).
	lastProgress atomic.Int64
	nowProgress  func() int64
	// free are idle slots; mu guards all (read by the kill goroutine).
	free []*slot
	mu   sync.Mutex
	all  []*slot
}

// slot is one connection of a lane with the buffers of one request. A
// stream holds a slot while its turn is in flight; a lane has as many
// slots as it ever had requests in flight at once.
type slot struct {
	k *conn
	// body is the request body, or only its head and tail when the
	// message list is streamed (stream.conv set; streambody.go).
	body    []byte
	stream  streamBody
	text    []byte
	session []byte
	// jobs feeds the slot's goroutine (engine.work), started by its first
	// request and ended by closeSlots.
	jobs chan slotJob
}

// stream is one conversation instance of a lane's tree.
type stream struct {
	session int
	corrID  string
	marker  string
	plan    *timing.Plan
	idx     int
	parent  int
	conv    convBuilder
	models  modelMap
	// reqs are the stream's recorded requests in turn order.
	reqs []dataset.Request
	// parentCorr and rootCorr are the correlation ids of the spawning
	// stream and of the tree.
	parentCorr, rootCorr string
}

// completion is a finished request, handed back to its lane goroutine.
type completion struct {
	id  timing.SendID
	out timing.Outcome
	end time.Time
	sl  *slot
}

func (e *engine) nowNs() int64 { return e.base.UnixNano() + int64(time.Since(e.base)) }

// now returns the engine clock: wall time at start plus monotonic time
// since, so it never jumps.
func (e *engine) now() time.Time { return time.Unix(0, e.nowNs()) }

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
	e.markAborted(reason, msg)
	e.killAll()
}

// markAborted records the first reason the run was aborted for (later
// ones are dropped) and logs it.
func (e *engine) markAborted(reason, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.res.Aborted == "" {
		e.res.Aborted, e.res.AbortMessage = reason, msg
		e.c.Logf("%s", msg)
		if co := e.c.Coordinator; co != nil && !e.fromPeer.Load() {
			go co.Abort(reason, msg)
		}
	}
}

// run drives every lane through the warmup stages, the barriers and
// profiling.
func (e *engine) run() {
	e.warmup()
	if e.stopped() {
		return
	}
	warmupSent := e.sched.Stats().Sent[0]
	// Every shard's warmup done: profiling starts at one instant, aligned
	// over every lane of the run.
	now, align, ok := e.barrier(BarrierWarmup, e.sched.PrepareProfiling())
	if !ok {
		return
	}
	e.profile(now, align, warmupSent)
}

// warmup runs the warmup stage (start-state primers or the legacy
// warmup) and, when the generation has one, the accelerated cache warmup
// after every shard's primers; the warmup grace period bounds both.
func (e *engine) warmup() {
	c := e.c
	now := e.now()
	e.res.WarmupStart = now
	total := e.sched.WarmupSends()
	c.Progress.warmupTotal.Store(int64(total))
	if c.Observer != nil {
		c.Observer.WarmupStarted(total, now)
	}
	e.logStartStates()
	var timeout *time.Timer
	if c.WarmupGracePeriod > 0 {
		timeout = time.AfterFunc(c.WarmupGracePeriod, func() {
			e.abort(AbortWarmupTimeout, fmt.Sprintf("warmup did not finish within the warmup grace period of %s; in-flight warmup requests were cancelled", c.WarmupGracePeriod))
		})
	}
	e.sched.StartWarmup(now)
	if r := e.sched.PrimerRamp(); r > 0 {
		c.Logf("warmup: %d primers spread over %s so every trajectory reaches its t* at the same instant", e.primers(), r.Round(time.Millisecond))
	}
	e.stage()
	if !e.stopped() && e.sched.HasAcceleratedWarmup() {
		e.cacheWarmup(total)
	}
	if timeout != nil {
		timeout.Stop()
	}
	e.logWarmupRetries()
}

// cacheWarmup runs the accelerated cache warmup once every shard's
// primers are done (total is the warmup's sends, primers included).
func (e *engine) cacheWarmup(total int) {
	c := e.c
	st := e.sched.Stats()
	if c.WarmupRequestsPerLane > 0 {
		c.Logf("warmup: %d primers done; cache warmup: every lane replays its tree with no idle delay and 1 output token until it has sent %d more requests (%d in all)",
			st.Sent[0], c.WarmupRequestsPerLane, total)
	} else {
		c.Logf("warmup: %d primers done; cache warmup: every lane replays its tree with no idle delay and 1 output token for %s", st.Sent[0], c.AgenticCacheWarmupDuration)
	}
	at, _, ok := e.barrier(BarrierPrimers, timing.Alignment{})
	if ok {
		e.sched.StartAcceleratedWarmup(at)
		e.stage()
	}
}

// profile runs the profiling stage from now until the deadline (or the
// stop), measures the client's CPU over it, passes the end barrier and
// says why it ended. warmupSent is the number of warmup requests sent.
func (e *engine) profile(now time.Time, align timing.Alignment, warmupSent int) {
	c := e.c
	e.sched.StartProfilingAligned(now, align)
	e.res.ProfilingStart = now
	u0, s0, cpuOK := processCPU()
	e.res.Deadline = e.sched.Deadline()
	if c.Observer != nil {
		c.Observer.ProfilingStarted(now, e.res.Deadline)
	}
	if c.Generation.Primers {
		c.Logf("warmup: %d requests; profiling resumes %d lanes from their handed-off state", warmupSent, len(e.lanes))
	}
	// After the deadline and the grace period, in-flight requests are
	// cancelled; the timer lives until profiling has ended, the end
	// barrier included.
	graceTimer := time.AfterFunc(time.Until(e.res.Deadline)+c.GracePeriod, e.killAll)
	defer graceTimer.Stop()
	e.stage()
	e.res.ProfilingEnd = time.Now()
	if u1, s1, ok := processCPU(); ok && cpuOK {
		e.res.ProfilingUserCPU, e.res.ProfilingSystemCPU = u1-u0, s1-s0
	}
	if c.Coordinator != nil && !e.stopped() {
		e.barrier(BarrierEnd, timing.Alignment{})
	}
	e.setEndReason()
	if st := e.sched.Stats(); c.Generation.RuntimeIdleCaps {
		c.Logf("profiling: system idle cap %s: %d jumps, %s skipped; trace idle cap %s: %d jumps, %s skipped",
			capStr(c.SystemIdleGapCap), st.SystemIdleJumps, st.SystemIdleSkipped.Round(time.Millisecond),
			capStr(c.TraceIdleGapCap), st.TraceIdleJumps, st.TraceIdleSkipped.Round(time.Millisecond))
	}
	if c.Observer != nil {
		c.Observer.ProfilingEnded(e.res.ProfilingEnd)
	}
}

// setEndReason says why profiling ended; the first case that holds
// wins: an abort, a second signal, a signal, every lane done before the
// deadline, the deadline.
func (e *engine) setEndReason() {
	e.mu.Lock()
	aborted, cancelled, killed, term := e.res.Aborted, e.res.Cancelled, e.res.Killed, e.res.Terminated
	e.mu.Unlock()
	switch {
	case aborted != "":
		e.res.EndReason = "aborted: " + aborted
	case killed:
		e.res.EndReason = "interrupted twice: the requests in flight were cancelled at once, without the grace period"
	case cancelled && term != nil:
		e.res.EndReason = "interrupted (" + term.Error() + ")"
	case cancelled:
		e.res.EndReason = "interrupted"
	case e.res.ProfilingEnd.Before(e.res.Deadline):
		e.res.EndedEarly = true
		e.res.EndReason = "every lane was done before the deadline: no turn was left to send before it"
	default:
		e.res.EndReason = "duration reached"
	}
}

func capStr(d time.Duration) string {
	if d <= 0 {
		return "off"
	}
	return d.String()
}

// stage runs every lane's current stage on a goroutine per lane and waits
// until each is done (or issuing stopped and its requests finished).
func (e *engine) stage() {
	var wg sync.WaitGroup
	for _, l := range e.lanes {
		wg.Add(1)
		go func(l *lane) {
			defer wg.Done()
			e.drive(l)
		}(l)
	}
	wg.Wait()
}

// primers returns the number of start-state primers of the run.
func (e *engine) primers() int {
	n := e.sched.WarmupSends()
	if e.c.Generation.Takes.CacheWarmup {
		n -= len(e.lanes) * e.c.WarmupRequestsPerLane
	}
	return n
}

// logStartStates logs every lane's start state: its trace, its start turn
// k_i or its t* (as a share of the tree's recorded span), the root's next
// turn, and how many streams are live.
func (e *engine) logStartStates() {
	c := e.c
	for i := range e.lanes {
		tl := e.sched.Lane(i)
		tr := tl.Tree()
		p := tr.Plan()
		live, ready := tl.StartStreams()
		if k := tl.StartTurn(); k >= 0 {
			c.Logf("lane %4d: start_turn=%d/%d live=%d ready=%d trace_id=%s", tl.Index(), k, len(p.Streams[0].Turns), live, ready, p.TraceID)
			continue
		}
		c.Logf("lane %4d: sample_time=%.1f%% root_next=%s live=%d ready=%d trace_id=%s", tl.Index(), 100*tl.StartShare(), tl.RootNext(), live, ready, p.TraceID)
	}
}

// sendSpinAhead is how early a lane's timer fires before its send time.
// Go's netpoller sleeps in whole milliseconds, so a timer alone fires up
// to ~1 ms late when the process is otherwise idle (bench/run measured a
// 0.6 ms median lateness); the lane covers the last stretch by yielding
// (runtime.Gosched), which runs any other ready goroutine first and costs
// CPU only while nothing else is ready.
const sendSpinAhead = time.Millisecond

// drive runs the lane's current phase: it releases what is due, starts
// each request on a goroutine of its own, and waits for the next wake-up,
// a completion, a shift of the global clock, or the stop. It returns when
// the lane's phase is done, or when issuing stopped and the lane's
// requests have all finished.
func (e *engine) drive(l *lane) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if e.stopped() {
			e.drain(l)
			return
		}
		before := e.sched.GlobalOffset()
		l.sends = l.tl.Due(e.now(), l.sends[:0])
		if e.sched.GlobalOffset() != before {
			// A timer fired into a replay barrier with nothing in flight,
			// and the system idle cap moved every lane's timers.
			e.wakeAll()
		}
		if len(l.sends) == 1 && l.tl.InFlight() == 1 && !l.tl.Pending() {
			// The lane's only work is this request: it runs here (see
			// runInline).
			e.runInline(l, &l.sends[0])
			continue
		}
		for i := range l.sends {
			e.launch(l, &l.sends[i])
		}
		if l.tl.PhaseDone() && l.tl.InFlight() == 0 {
			return
		}
		nudge := *e.nudge.Load()
		var wakeC <-chan time.Time
		wake, ok := l.tl.NextWake()
		if ok {
			d := wake.Sub(e.now())
			if d <= 0 {
				continue
			}
			if d > sendSpinAhead {
				timer.Reset(d - sendSpinAhead)
				wakeC = timer.C
			} else {
				// The last stretch: yield until the send time (see
				// sendSpinAhead), taking completions as they come.
				e.spinUntil(l, wake)
				continue
			}
		}
		select {
		case cp := <-l.done:
			timer.Stop()
			e.complete(l, cp)
			for more := true; more; {
				select {
				case cp := <-l.done:
					e.complete(l, cp)
				default:
					more = false
				}
			}
		case <-wakeC:
			e.spinUntil(l, wake)
		case <-nudge:
			timer.Stop()
		case <-e.stopIssuing:
			timer.Stop()
		}
	}
}

// spinUntil yields until wake, handling completions that arrive meanwhile.
func (e *engine) spinUntil(l *lane, wake time.Time) {
	for e.now().Before(wake) {
		select {
		case cp := <-l.done:
			e.complete(l, cp)
			return
		case <-e.stopIssuing:
			return
		default:
		}
		runtime.Gosched()
	}
}

// drain waits for every in-flight request of the lane.
func (e *engine) drain(l *lane) {
	for l.tl.InFlight() > 0 {
		e.complete(l, <-l.done)
	}
}

// complete hands a finished request back to the core.
func (e *engine) complete(l *lane, cp completion) {
	l.free = append(l.free, cp.sl)
	before := e.sched.GlobalOffset()
	l.tl.Complete(cp.id, cp.out, cp.end)
	if e.sched.GlobalOffset() != before {
		e.wakeAll()
	}
}

// wakeAll makes every lane recompute its next wake-up.
func (e *engine) wakeAll() {
	e.nudgeMu.Lock()
	old := e.nudge.Load()
	ch := make(chan struct{})
	e.nudge.Store(&ch)
	close(*old)
	e.nudgeMu.Unlock()
}

// launch starts send s of lane l on a goroutine of its own.
func (e *engine) launch(l *lane, s *timing.Send) {
	st := l.stream(e, s)
	sl := l.slot(e.c, e.kill)
	e.requests.Add(1)
	if sl.jobs == nil {
		sl.jobs = make(chan slotJob, 1)
		go e.work(sl)
	}
	sl.jobs <- slotJob{l: l, s: *s, st: st} // the slot is idle: never blocks
}

// runInline runs send s on the lane goroutine itself and hands its
// outcome to the core, when it is the lane's only work: nothing else in
// flight and no turn waiting on a timer (timing.Lane.Pending), so nothing
// the lane waits for can happen before the request ends (a completion is
// the only event that gives the lane new work; a wake-up at the phase's
// deadline ends the phase only once the request is done; a shift of the
// global clock moves only pending timers; a stop ends the loop after the
// request, and a kill aborts its connection). It saves a slot goroutine two handoffs per
// request: the one-conversation lanes of v0.2 and v0.3, and every lane
// whose tree has one stream live, never leave their goroutine.
func (e *engine) runInline(l *lane, s *timing.Send) {
	st := l.stream(e, s)
	sl := l.slot(e.c, e.kill)
	e.requests.Add(1)
	o := e.execute(l, s, st, sl)
	e.requests.Done()
	e.complete(l, completion{id: s.ID(), out: o.Outcome, end: time.Unix(0, o.endNs), sl: sl})
}

// slotJob is one request handed to a slot's goroutine.
type slotJob struct {
	l  *lane
	s  timing.Send
	st *stream
}

// work runs the requests of one slot, one at a time, on one goroutine,
// until closeSlots: the stack the first request grew serves the next ones
// (a goroutine per request grew a new stack every time).
func (e *engine) work(sl *slot) {
	for j := range sl.jobs {
		o := e.execute(j.l, &j.s, j.st, sl)
		j.l.done <- completion{id: j.s.ID(), out: o.Outcome, end: time.Unix(0, o.endNs), sl: sl}
		e.requests.Done()
	}
}

// treeState is the engine's side of one tree of a lane: the
// conversation state of its streams and its cache-bust marker.
type treeState struct {
	rootSession int
	streams     []*stream
	marker      string
}

// stream returns the conversation state of send s, creating it on the
// stream's first send.
func (l *lane) stream(e *engine, s *timing.Send) *stream {
	c := e.c
	ts := l.trees[s.Tree]
	if ts == nil {
		if len(l.trees) > 0 {
			l.pruneTrees()
		}
		ts = &treeState{rootSession: s.RootSession, streams: make([]*stream, len(s.Plan.Streams))}
		if mark := c.CacheBust.Marker; mark != nil {
			// One marker per tree: a recycled tree (a new pass) gets a
			// new one.
			ts.marker = mark(c.BenchmarkID, s.RecyclePass, s.Lane, s.Plan.TraceID)
		}
		l.trees[s.Tree] = ts
	}
	if s.RootSession != ts.rootSession {
		// The core renewed the tree's sessions (v0.3 profiling re-sends
		// its start state as new sessions): new correlation ids for all.
		ts.rootSession = s.RootSession
		for i, st := range ts.streams {
			if st != nil {
				st.session, st.corrID = s.RootSession+i, uuid.NewString()
			}
		}
		for _, st := range ts.streams {
			if st != nil {
				ts.link(st)
			}
		}
	}
	if st := ts.streams[s.Stream]; st != nil {
		return st
	}
	if s.Stream != 0 && ts.streams[0] == nil {
		// The tree's root is not live yet (a start state of children, or a
		// root waiting on them): its correlation id, the tree's id, is
		// minted now so the children can carry it.
		ts.streams[0] = l.newStream(e, s, ts, 0, -1, s.RootSession)
	}
	st := l.newStream(e, s, ts, s.Stream, s.Parent, s.Session)
	return st
}

// newStream creates the conversation state of stream si of send s's tree.
func (l *lane) newStream(e *engine, s *timing.Send, ts *treeState, si, parent, session int) *stream {
	c := e.c
	tr := &c.Traces[s.Trace]
	ps := &s.Plan.Streams[si]
	st := &stream{session: session, corrID: uuid.NewString(), plan: s.Plan, idx: si, parent: parent, reqs: e.reqs[s.Trace][si], models: newModelMap(tr, c.Models)}
	ts.streams[si] = st
	ts.link(st)
	st.marker = ts.marker
	if c.Generation.StreamScope && si > 0 && !s.Seeded && ts.marker != "" {
		// v0.3 marked a child spawned during the run with pass 0 and lane
		// 0: the same marker for the whole run, whichever tree spawns it.
		st.marker = c.CacheBust.Marker(c.BenchmarkID, 0, 0, ps.ConvID)
	}
	st.conv = convBuilder{syn: c.Synth, tr: tr, st: ps, reqs: st.reqs, ownScope: c.Generation.StreamScope}
	return st
}

// pruneTrees forgets the trees the lane's core no longer plays.
func (l *lane) pruneTrees() {
	l.live = l.tl.Trees(l.live[:0])
	for id := range l.trees {
		if !slices.Contains(l.live, id) {
			delete(l.trees, id)
		}
	}
}

// link sets the parent and root correlation ids of st from the tree's
// streams.
func (ts *treeState) link(st *stream) {
	root := ts.streams[0]
	if root == nil || st == root {
		st.rootCorr = st.corrID
		st.parentCorr = ""
		return
	}
	st.rootCorr = root.corrID
	st.parentCorr = root.corrID
	if st.parent >= 0 && st.parent < len(ts.streams) && ts.streams[st.parent] != nil {
		st.parentCorr = ts.streams[st.parent].corrID
	}
}

// slot returns an idle slot of the lane, creating one when none is free.
func (l *lane) slot(c *runConfig, kill <-chan struct{}) *slot {
	if n := len(l.free); n > 0 {
		sl := l.free[n-1]
		l.free = l.free[:n-1]
		return sl
	}
	k, err := newConn(c, c.RequestTimeout)
	if err != nil {
		// The URL was validated before the run; a conn cannot fail here.
		panic(err)
	}
	sl := &slot{k: k}
	l.mu.Lock()
	l.all = append(l.all, sl)
	l.mu.Unlock()
	if killed(kill) {
		// The kill goroutine may have aborted the lane's slots before this
		// one existed: a request must not outlive the kill.
		k.abort()
	}
	return sl
}

// killed reports whether kill is closed.
func killed(kill <-chan struct{}) bool {
	select {
	case <-kill:
		return true
	default:
		return false
	}
}

func (l *lane) abortSlots() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, sl := range l.all {
		sl.k.abort()
	}
}

func (l *lane) closeSlots() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, sl := range l.all {
		sl.k.close()
		sl.body, sl.text, sl.stream = nil, nil, streamBody{}
		if sl.jobs != nil {
			close(sl.jobs)
			sl.jobs = nil
		}
	}
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
