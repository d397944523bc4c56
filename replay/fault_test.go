package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/server/sim"
)

// startFaultSim starts an in-process sim configured by a sim:// URL query
// (the same knobs as `agentperf sim`), serving model "m".
func startFaultSim(t *testing.T, query string) *sim.Server {
	t.Helper()
	cfg, err := sim.ParseURL("sim://?"+query, sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model = "m"
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Stalled handlers end when the client closes; do not wait for a
		// stall that nobody reads any more.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv
}

// checkSimAccounting is checkAccounting for a sim server: the accounting
// adds up, every request is in exactly one sink, and the records by kind
// agree with the counters.
func checkSimAccounting(t *testing.T, res *Result, srv *sim.Server, sink, ovf *memSink, simSawAll bool) {
	t.Helper()
	a := res.Accounting
	if err := a.Check(); err != nil {
		t.Fatalf("accounting: %v (%+v)", err, a)
	}
	if got := int(srv.Stats().Requests); simSawAll && (got > a.Sent || a.Sent-got > a.Cancelled) {
		t.Fatalf("server received %d requests, accounting says %d sent (%d cancelled)", got, a.Sent, a.Cancelled)
	}
	recs := sink.records()
	if len(recs)+len(ovf.records()) != a.Sent {
		t.Fatalf("%d records + %d overflow records != %d sent", len(recs), len(ovf.records()), a.Sent)
	}
	var warmOK, warmErr, prof, perr, canc int
	for _, r := range recs {
		switch {
		case r.Cancelled:
			canc++
		case r.Phase == metrics.PhaseWarmup && r.Error != nil:
			warmErr++
		case r.Phase == metrics.PhaseWarmup:
			warmOK++
		case r.Error != nil:
			perr++
		default:
			prof++
		}
	}
	if warmOK != a.WarmupOK || warmErr != a.WarmupErrors || prof != a.ProfilingOK || perr != a.ProfilingErrors || canc != a.Cancelled {
		t.Fatalf("records by kind warm=%d/%d prof=%d perr=%d cancelled=%d disagree with %+v", warmOK, warmErr, prof, perr, canc, a)
	}
}

// TestServerFaults injects every fault mode of the sim into profiling
// requests (every N-th request, N past the warmup) and checks that each
// faulted request becomes one error record with the right category, type,
// code and a useful message; that every lane keeps working afterwards (a
// success follows its first error, so reset connections are re-dialled);
// and that the accounting adds up.
func TestServerFaults(t *testing.T) {
	const lanes = 3
	cases := []struct {
		name    string
		query   string // sim knobs (zero-latency added)
		fault   string // sim.Fault* name counted by the sim ("" = none)
		timeout time.Duration
		// want* describe the error record of a faulted request; wantType
		// "" means the fault must not be an error at all.
		wantCat, wantType string
		wantCode          int
		wantMsg           []string // substrings of Error.Message
		// wantServerType is the server's own error type (error_type),
		// kept beside the reason phrase in Type.
		wantServerType string
	}{
		{name: "500", query: "fault-500-every=5", fault: sim.FaultHTTP500,
			wantCat: metrics.CategoryHTTP, wantType: "Internal Server Error", wantCode: 500, wantMsg: []string{"simulated 500"}, wantServerType: "InternalServerError"},
		{name: "503", query: "fault-503-every=5", fault: sim.FaultHTTP503,
			wantCat: metrics.CategoryHTTP, wantType: "Service Unavailable", wantCode: 503, wantMsg: []string{"simulated 503"}, wantServerType: "ServiceUnavailableError"},
		{name: "429", query: "fault-429-every=5", fault: sim.FaultHTTP429,
			wantCat: metrics.CategoryHTTP, wantType: "Too Many Requests", wantCode: 429, wantMsg: []string{"simulated 429"}, wantServerType: "RateLimitError"},
		// Our own words, not a hint about "connection: close".
		{name: "reset before headers", query: "fault-reset-before-headers-every=5", fault: sim.FaultResetBeforeHeaders,
			wantCat: metrics.CategoryTransport, wantType: "ConnectionReset", wantMsg: []string{"connection reset before response headers", "without a response", "check the server log"}},
		{name: "reset mid-stream", query: "fault-reset-mid-stream-every=5", fault: sim.FaultResetMidStream,
			wantCat: metrics.CategoryTransport, wantType: "ConnectionReset", wantMsg: []string{"connection reset mid-stream after", "content chunks"}},
		{name: "stall past the request timeout", query: "fault-stall-every=5&fault-stall-for=1h", fault: sim.FaultStall,
			timeout: time.Second,
			wantCat: metrics.CategoryTimeout, wantType: "Timeout", wantMsg: []string{"timeout mid-stream after"}},
		{name: "slow first byte past the request timeout", query: "fault-slow-first-byte-every=5&fault-slow-first-byte-for=1h", fault: sim.FaultSlowFirstByte,
			timeout: time.Second,
			wantCat: metrics.CategoryTimeout, wantType: "Timeout", wantMsg: []string{"timeout before response headers"}},
		{name: "malformed SSE", query: "fault-malformed-sse-every=5", fault: sim.FaultMalformedSSE,
			wantCat: metrics.CategoryMalformed, wantType: "MalformedResponse", wantMsg: []string{"invalid JSON in SSE data"}},
		{name: "stream error event", query: "fault-stream-error-every=5", fault: sim.FaultStreamError,
			wantCat: metrics.CategoryStreamError, wantType: "StreamError", wantCode: 500, wantMsg: []string{"simulated engine error"}, wantServerType: "InternalServerError"},
		// A response without usage is a valid record that lacks the
		// server's token counts, not an error.
		{name: "missing usage is not an error", query: "fault-missing-usage-every=5", fault: sim.FaultMissingUsage},
		{name: "slow first byte is not an error", query: "fault-slow-first-byte-every=5&fault-slow-first-byte-for=150ms", fault: sim.FaultSlowFirstByte,
			timeout: 5 * time.Second},
		{name: "server down then back", query: "fault-down-after-requests=20&fault-down-for=300ms", fault: sim.FaultDown,
			wantCat: metrics.CategoryTransport, wantType: "ConnectionReset", wantMsg: []string{"connection reset"}},
	}
	// Under -short a case of each kind runs (an HTTP status, a reset, a
	// timeout, a malformed stream); the others need the full suite.
	short := map[string]bool{"500": true, "reset mid-stream": true, "stall past the request timeout": true, "malformed SSE": true}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !short[tc.name] {
				testshared.SkipIfShort(t, "one fault mode of eleven against the simulator; four run under -short")
			}
			srv := startFaultSim(t, "zero-latency=true&"+tc.query)
			sink, ovf := &memSink{}, &memSink{}
			cfg := testConfig(t, srv.URL, testCorpus(t, 6), sink, ovf)
			cfg.Concurrency = lanes
			cfg.BenchmarkDuration = 1500 * time.Millisecond
			cfg.InterTurnDelayCap = time.Millisecond
			cfg.RequestTimeout = tc.timeout
			if tc.fault == sim.FaultDown || tc.timeout == time.Second {
				cfg.BenchmarkDuration = 3 * time.Second
			}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Aborted != "" || res.Cancelled {
				t.Fatalf("run ended early: %q %q cancelled=%v", res.Aborted, res.AbortMessage, res.Cancelled)
			}
			// In the down window the sim resets new connections before it
			// sees a request, so it counts fewer requests than were sent.
			checkSimAccounting(t, res, srv, sink, ovf, tc.fault != sim.FaultDown)
			injected := srv.Stats().Faults[tc.fault]
			if injected == 0 {
				t.Fatalf("the sim injected no %s fault (stats %+v)", tc.fault, srv.Stats().Faults)
			}
			// Only a malformed response goes to encoding/json: every other
			// one, error events included, is decided in one pass.
			wantFallbacks := 0
			if tc.fault == sim.FaultMalformedSSE {
				wantFallbacks = int(injected)
			}
			if res.ResponseFallbacks != wantFallbacks {
				t.Fatalf("Result.ResponseFallbacks = %d, want %d", res.ResponseFallbacks, wantFallbacks)
			}
			recs := sink.records()
			var errs int
			firstErr := map[int]int{} // lane → index of its first error record
			last := map[int]int{}     // lane → index of its last record
			for i, r := range recs {
				last[r.Lane] = i
				if r.Error == nil {
					continue
				}
				errs++
				if _, ok := firstErr[r.Lane]; !ok {
					firstErr[r.Lane] = i
				}
				if r.Phase != metrics.PhaseProfiling {
					t.Fatalf("a warmup request failed: %+v", r.Error)
				}
				e := r.Error
				if tc.wantType == "" || e.Category != tc.wantCat || e.Type != tc.wantType || e.Code != tc.wantCode || e.ServerType != tc.wantServerType {
					t.Fatalf("error record %+v, want category %q type %q code %d server type %q", *e, tc.wantCat, tc.wantType, tc.wantCode, tc.wantServerType)
				}
				if strings.Contains(strings.ToLower(e.Message), "connection: close") {
					t.Fatalf("error message %q passes on a misleading hint about the Connection header", e.Message)
				}
				if e.Message == "" {
					t.Fatalf("error record without a message: %+v", *e)
				}
				for _, w := range tc.wantMsg {
					if !strings.Contains(e.Message, w) {
						t.Fatalf("error message %q does not mention %q", e.Message, w)
					}
				}
				if r.RequestEndNs < r.RequestStartNs || r.RequestStartNs == 0 {
					t.Fatalf("error record timestamps: start %d end %d", r.RequestStartNs, r.RequestEndNs)
				}
				if r.Cancelled || r.ContextOverflow {
					t.Fatalf("fault record marked cancelled=%v overflow=%v", r.Cancelled, r.ContextOverflow)
				}
			}
			if tc.fault == sim.FaultMissingUsage {
				without := 0
				for _, r := range recs {
					if r.Error == nil && r.Usage == nil {
						without++
					}
				}
				if int64(without) != injected {
					t.Fatalf("%d successful records without usage, the sim dropped usage from %d responses", without, injected)
				}
			}
			switch {
			case tc.wantType == "":
				if errs != 0 {
					t.Fatalf("%d error records for a fault that is not an error", errs)
				}
			case tc.fault == sim.FaultDown:
				// One down window of 300 ms: requests in it fail (those that
				// reached the handler and those whose connection was reset
				// at accept); once the server is back no lane fails again,
				// so every error started within the window (plus slack for
				// a loaded machine), counted from the first error.
				var first int64
				for _, r := range recs {
					if r.Error == nil {
						continue
					}
					if first == 0 {
						first = r.RequestStartNs
					}
					if d := time.Duration(r.RequestStartNs - first); d > 300*time.Millisecond+time.Second {
						t.Fatalf("lane %d failed %v after the down window began, after the server came back: %+v", r.Lane, d, *r.Error)
					}
				}
				if int64(errs) < injected {
					t.Fatalf("%d error records for %d down-window resets in the handler", errs, injected)
				}
			default:
				// One error record per injected fault, nothing else.
				if int64(errs) != injected {
					t.Fatalf("%d error records, the sim injected %d %s faults", errs, injected, tc.fault)
				}
			}
			// Every lane that saw an error sent again: its connection was
			// not left broken. (Every error is an injected fault, above, so
			// a later request succeeded or was faulted by the simulator too:
			// with a 1 s timeout in a 3 s run a lane may draw the simulator's
			// every-5th fault on each of its few requests.)
			for lane, i := range firstErr {
				if last[lane] == i {
					t.Fatalf("lane %d sent nothing after its first error (record %d)", lane, i)
				}
			}
			if res.Accounting.ProfilingOK < 10 {
				t.Fatalf("only %d successful profiling requests", res.Accounting.ProfilingOK)
			}
		})
	}
}

// TestFailedRequestThresholdFiresExactly runs one lane (deterministic
// order) against a sim failing every N-th request. The threshold
// (scenario.Threshold) fires once the failures among the requests sent so
// far show a rate above the limit with 99.9 % confidence: at once for a
// rate far above it, never for one below it, and the message names the
// counts it judged.
func TestFailedRequestThresholdFiresExactly(t *testing.T) {
	cases := []struct {
		name      string
		limit     float64
		every     int
		wantAbort bool
	}{
		// Half the requests fail against a 10 % limit: 14 of the first 28.
		{name: "far above the limit", limit: 0.1, every: 2, wantAbort: true},
		// Every 10th fails (10 %) against 20 %: never.
		{name: "below the limit", limit: 0.2, every: 10, wantAbort: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startFaultSim(t, "zero-latency=true&fault-500-every="+strconv.Itoa(tc.every))
			sink, ovf := &memSink{}, &memSink{}
			cfg := testConfig(t, srv.URL, testCorpus(t, 4), sink, ovf)
			cfg.Concurrency = 1
			cfg.BenchmarkDuration = time.Second
			if !tc.wantAbort {
				cfg.BenchmarkDuration = 3 * time.Second // enough records also under -race on a loaded machine
			}
			cfg.InterTurnDelayCap = time.Millisecond
			withThreshold(&cfg, tc.limit)
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkSimAccounting(t, res, srv, sink, ovf, true)
			var prof, failed int
			for _, r := range sink.records() {
				if r.Phase != metrics.PhaseProfiling || r.Cancelled {
					continue
				}
				prof++
				if r.Error != nil {
					failed++
				}
			}
			if !tc.wantAbort {
				if res.Aborted != "" {
					t.Fatalf("aborted: %s", res.AbortMessage)
				}
				if failed == 0 || prof < 20 {
					t.Fatalf("%d of %d profiling requests failed; the test needs failures and enough records", failed, prof)
				}
				return
			}
			if res.Aborted != AbortFailedRequestThreshold {
				t.Fatalf("Aborted = %q (%s), want %q", res.Aborted, res.AbortMessage, AbortFailedRequestThreshold)
			}
			// One lane: every request sent has finished when one ends, so the
			// judged prefix is exactly the records so far.
			want := fmt.Sprintf("%d of the first %d profiling requests sent failed", failed, prof)
			if !strings.Contains(res.AbortMessage, want) || !strings.Contains(res.AbortMessage, "--failed-request-threshold") {
				t.Fatalf("abort message %q, want %q and the flag", res.AbortMessage, want)
			}
			if prof > 40 {
				t.Fatalf("the threshold fired only after %d profiling records (%d failed)", prof, failed)
			}
		})
	}
}

// TestStalledRequestsAreCancelled: requests stalled for an hour (no request
// timeout) are cancelled once the grace period after the duration, or
// after a cancellation of ctx, has passed: Run returns, each becomes a
// cancelled record (not an error), and the accounting adds up.
func TestStalledRequestsAreCancelled(t *testing.T) {
	for _, viaCtx := range []bool{false, true} {
		name := "after the duration"
		if viaCtx {
			name = "after ctx is cancelled"
		}
		t.Run(name, func(t *testing.T) {
			// 3 lanes; requests 4, 8, … stall, so every lane soon holds one.
			srv := startFaultSim(t, "zero-latency=true&fault-stall-every=4&fault-stall-for=1h")
			sink, ovf := &memSink{}, &memSink{}
			cfg := testConfig(t, srv.URL, testCorpus(t, 6), sink, ovf)
			cfg.InterTurnDelayCap = time.Millisecond
			cfg.GracePeriod = 300 * time.Millisecond
			ctx := context.Background()
			if viaCtx {
				cfg.BenchmarkDuration = time.Hour
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 700*time.Millisecond)
				defer cancel()
			} else {
				cfg.BenchmarkDuration = 700 * time.Millisecond
			}
			res, err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkSimAccounting(t, res, srv, sink, ovf, true)
			if res.Cancelled != viaCtx || res.Aborted != "" {
				t.Fatalf("Cancelled = %v, Aborted = %q", res.Cancelled, res.Aborted)
			}
			a := res.Accounting
			if a.Cancelled != cfg.Concurrency || a.ProfilingErrors != 0 {
				t.Fatalf("accounting %+v: want one cancelled request per lane (%d) and no errors", a, cfg.Concurrency)
			}
			for _, r := range sink.records() {
				if !r.Cancelled {
					continue
				}
				if r.Error == nil || r.Error.Category != metrics.CategoryCancelled || !strings.Contains(r.Error.Message, "request cancelled mid-stream") || r.CancellationNs == 0 {
					t.Fatalf("cancelled record: %+v error %+v", r, r.Error)
				}
			}
		})
	}
}

// TestTransportErrorClassification pins the classification of the errors
// the client's framing and the net package return.
func TestTransportErrorClassification(t *testing.T) {
	k := &conn{}
	cases := []struct {
		name     string
		err      error
		cat, typ string
	}{
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, metrics.CategoryTransport, "ConnectionReset"},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, metrics.CategoryTransport, "ConnectionRefused"},
		{"deadline", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, metrics.CategoryTimeout, "Timeout"},
		{"closed before the first byte", errClosedBeforeResponse, metrics.CategoryTransport, "ConnectionReset"},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, metrics.CategoryTransport, "ConnectionReset"},
		{"malformed framing", fmt.Errorf("%w: chunk size \"zz\"", errMalformedHTTP), metrics.CategoryTransport, "TransportError"},
		{"unexpected EOF", io.ErrUnexpectedEOF, metrics.CategoryTransport, "ConnectionReset"},
		{"other", errors.New("tls: bad certificate"), metrics.CategoryTransport, "TransportError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := k.transportError(tc.err, "mid-stream")
			if e.Category != tc.cat || e.Type != tc.typ || !strings.Contains(e.Message, "mid-stream") {
				t.Fatalf("%v → %+v, want %s/%s", tc.err, *e, tc.cat, tc.typ)
			}
		})
	}
}

// TestFailedRequestThresholdDeadServer: the server goes down for good
// right after the warmup (one request per lane), so every profiling
// request fails. The threshold fires as soon as its rule holds (at the
// latest when the first 19 requests have all failed), the lanes stop
// sending once it fired, whatever the number of lanes, and the abort says
// what it judged.
//
// How many requests fail in all depends on scheduling, not only on the
// engine: the lanes go on sending while the goroutine whose request made
// the threshold fire is between that verdict and the stop (on a loaded
// machine, a descheduled thread), and requests finishing out of order can
// make the rule hold a few requests later than 19. So the test does not
// bound the total; it watches the run (watchedThreshold): the verdict may
// not come later than the outcome that completes 19 failures in a row,
// and of the requests sent after it, which are held until the stop is
// issued, each lane sends at most the one it was about to send.
func TestFailedRequestThresholdDeadServer(t *testing.T) {
	for _, tc := range []struct{ lanes int }{{3}, {12}} {
		t.Run(strconv.Itoa(tc.lanes)+" lanes", func(t *testing.T) {
			srv := startFaultSim(t, "zero-latency=true&fault-down-for=1h&fault-down-after-requests="+strconv.Itoa(tc.lanes))
			sink, ovf := &memSink{}, &memSink{}
			w := newWatchedThreshold()
			cfg := testConfig(t, srv.URL, testCorpus(t, 4), &stopWatchSink{sink, w}, ovf)
			cfg.Concurrency = tc.lanes
			cfg.BenchmarkDuration = 10 * time.Second
			cfg.InterTurnDelayCap = time.Millisecond
			withThreshold(&cfg, 0.5)
			w.inner, cfg.Threshold = cfg.Threshold, w
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkSimAccounting(t, res, srv, sink, ovf, false)
			if res.Aborted != AbortFailedRequestThreshold {
				t.Fatalf("Aborted = %q (%s)", res.Aborted, res.AbortMessage)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.problems) > 0 {
				t.Fatalf("%s (%s)", strings.Join(w.problems, "; "), res.AbortMessage)
			}
			// At a 50 % limit, 19 failures in a row are needed.
			if e := res.Accounting.ProfilingErrors; e < 19 || e > w.sent {
				t.Fatalf("aborted after %d profiling errors, want 19 to the %d sent: %s", e, w.sent, res.AbortMessage)
			}
			if late := w.sent - w.sentAtFire; late > tc.lanes {
				t.Fatalf("%d requests were sent after the threshold fired (at %d sent), want at most one per lane (%d): %s", late, w.sentAtFire, tc.lanes, res.AbortMessage)
			}
			if !strings.Contains(res.AbortMessage, "of the first") || !strings.Contains(res.AbortMessage, "50.00%") {
				t.Fatalf("abort message %q", res.AbortMessage)
			}
			if res.Accounting.WarmupOK != tc.lanes || res.Accounting.ProfilingOK != 0 {
				t.Fatalf("accounting %+v", res.Accounting)
			}
		})
	}
}

// watchedThreshold wraps the run's Threshold and watches how the engine
// acts on it (TestFailedRequestThresholdDeadServer). It notes how many
// requests were sent when the threshold fired; a request sent after that
// is held until the engine issued the stop, which it knows from the Sink's
// Err (stopWatchSink), called by the goroutine that fired right after it
// stopped the run. It checks that the verdict comes no later than the
// outcome that completes failures of requests 1 to 19.
type watchedThreshold struct {
	inner Threshold

	mu         sync.Mutex
	sent       int
	failed     map[int]bool
	sentAtFire int    // requests sent when the threshold fired (0: not yet)
	fireGID    uint64 // the goroutine that got the verdict
	problems   []string
	reported   bool // the late verdict is in problems

	stopOnce sync.Once
	stopped  chan struct{} // closed once the firing goroutine returned from the abort
}

func newWatchedThreshold() *watchedThreshold {
	return &watchedThreshold{failed: map[int]bool{}, stopped: make(chan struct{})}
}

func (w *watchedThreshold) Sent() int {
	w.mu.Lock()
	fired := w.sentAtFire > 0
	w.mu.Unlock()
	if fired {
		select {
		case <-w.stopped:
		case <-time.After(10 * time.Second):
			w.mu.Lock()
			w.problems = append(w.problems, "a request sent after the threshold fired waited 10 s for the engine to stop the run")
			w.mu.Unlock()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent++
	return w.inner.Sent()
}

func (w *watchedThreshold) Done(seq int, b metrics.Bucket) (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	abort, msg := w.inner.Done(seq, b)
	if b == metrics.BucketProfilingError {
		w.failed[seq] = true
	}
	if abort {
		w.sentAtFire, w.fireGID = w.sent, goroutineID()
		return abort, msg
	}
	if w.sentAtFire == 0 && !w.reported {
		all := true
		for i := 1; i <= 19 && all; i++ {
			all = w.failed[i]
		}
		if all {
			w.problems = append(w.problems, fmt.Sprintf("requests 1 to 19 all failed (the last outcome: request %d) and the threshold did not fire", seq))
			w.reported = true
		}
	}
	return abort, msg
}

// sinkChecked is the engine's check of the Sink after a request's outcome:
// on the goroutine that fired, the run is stopped by then.
func (w *watchedThreshold) sinkChecked() {
	w.mu.Lock()
	gid := w.fireGID
	w.mu.Unlock()
	if gid != 0 && gid == goroutineID() {
		w.stopOnce.Do(func() { close(w.stopped) })
	}
}

// stopWatchSink is a memSink whose Err tells a watchedThreshold that the
// engine checked the Sink.
type stopWatchSink struct {
	*memSink
	w *watchedThreshold
}

func (s *stopWatchSink) Err() error { s.w.sinkChecked(); return nil }

// goroutineID is the calling goroutine's id, from its stack header
// ("goroutine 123 [running]:"); 0 when it cannot be read.
func goroutineID() uint64 {
	var buf [64]byte
	f := strings.Fields(string(buf[:runtime.Stack(buf[:], false)]))
	if len(f) < 2 {
		return 0
	}
	id, _ := strconv.ParseUint(f[1], 10, 64)
	return id
}

// TestPromptSynthesisFailureIsRecordedWithItsCause: a trace whose prompts
// cannot be built (its system prefix needs more blocks than its first
// request has) makes error records whose message says why, not only that
// it failed; a warmup on it aborts with that cause.
func TestPromptSynthesisFailureIsRecordedWithItsCause(t *testing.T) {
	srv := startFaultSim(t, "zero-latency=true")
	traces := testCorpus(t, 1)
	traces[0].SystemTokens = 64 * (len(traces[0].Requests[0].HashIDs) + 10)
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, traces, sink, ovf)
	cfg.Concurrency = 1
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkSimAccounting(t, res, srv, sink, ovf, false) // never reached the server
	if res.Aborted != AbortWarmupFailed {
		t.Fatalf("Aborted = %q (%s)", res.Aborted, res.AbortMessage)
	}
	recs := sink.records()
	if len(recs) != 1 || recs[0].Error == nil || recs[0].Error.Type != "PromptSynthesisError" {
		t.Fatalf("records %+v", recs)
	}
	msg := recs[0].Error.Message
	if !strings.Contains(msg, traces[0].ID) || !strings.Contains(msg, "system") || !strings.Contains(res.AbortMessage, msg) {
		t.Fatalf("record message %q / abort %q do not give the cause", msg, res.AbortMessage)
	}
}
