package replay

import (
	"bytes"
	"fmt"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/timing"
)

// A server that is restarting (docs/server-restarts.md). An answer that
// says the server is (re)loading its model — HTTP 503 whose body says
// "Loading model" (llama.cpp), or an equivalent — or a refused connection
// after the server has answered once in this run, is not the request's
// failure: the same request is sent again, after a pause, until the
// server answers or ServerRestartWait has passed since its first try. The
// same in warmup and in profiling. The request stays one request, sent
// once in the accounting and one record, whose start is its first try's:
// the time the restart took is the server's, in its latency and TTFT.
// The record says how long it waited (server_restart_wait_ns) and how
// many tries it took (server_restart_tries); Result.ServerRestartWaits
// counts such requests, and the first ones are logged. When the wait runs
// out, the request fails with its last answer, its message saying that
// the server was still restarting.

// DefaultServerRestartWait is how long a request waits for a restarting
// server (Config.ServerRestartWait).
const DefaultServerRestartWait = 2 * time.Minute

const (
	// restartPauseFirst is the first pause before a request is sent
	// again to a restarting server; it doubles up to restartPauseMax.
	restartPauseFirst = 250 * time.Millisecond
	restartPauseMax   = 2 * time.Second
	restartLogLines   = 5
)

// restartBodies are the texts of an HTTP 503 that mean the server is
// loading its model (matched case-insensitively in the error body).
var restartBodies = [][]byte{[]byte("loading model"), []byte("model is loading"), []byte("server is starting")}

// restarting reports whether a failed exchange says the server is
// restarting: a 503 with a loading body, or a refused connection once the
// server has answered in this run (before that, a refused connection is a
// wrong URL or a server not started, which fails at once).
func (e *engine) restarting(err *metrics.Error, body []byte) bool {
	if err == nil {
		return false
	}
	switch {
	case err.Type == "ConnectionRefused":
		return e.served.Load()
	case (err.Category == metrics.CategoryHTTP || err.Category == metrics.CategoryStreamError) && err.Code == 503:
		lower := bytes.ToLower(body)
		if len(lower) == 0 {
			lower = bytes.ToLower([]byte(err.Message))
		}
		for _, b := range restartBodies {
			if bytes.Contains(lower, b) {
				return true
			}
		}
	}
	return false
}

// restartPause waits before request s is sent again to a restarting
// server whose first refusal of it came at firstNs; it returns false when
// the wait is spent or the run stopped meanwhile.
func (e *engine) restartPause(s *timing.Send, err *metrics.Error, firstNs int64, tries int) bool {
	waited := time.Duration(e.nowNs() - firstNs)
	if e.c.ServerRestartWait <= 0 || waited >= e.c.ServerRestartWait || e.stopped() {
		return false
	}
	d := restartPauseFirst << min(tries-1, 8)
	d = min(d, restartPauseMax, e.c.ServerRestartWait-waited)
	if tries == 1 {
		if n := e.restartsLogged.Add(1); n <= restartLogLines {
			more := ""
			if n == restartLogLines {
				more = " (further waits are counted, not logged)"
			}
			e.c.Logf("server restarting: %s request on lane %d (trace %s turn %d) got %s%s: %s; sending it again until the server answers (at most %s); the wait counts as the server's time%s",
				s.Phase, s.Lane, e.c.Traces[s.Trace].ID, s.Turn, codePrefix(err.Code), err.Type, shorten(err.Message, 120), e.c.ServerRestartWait, more)
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return !e.stopped()
	case <-e.stopIssuing:
		return false
	}
}

// restartGaveUp marks the error of a request that waited the whole
// ServerRestartWait for a restarting server.
func restartGaveUp(err *metrics.Error, waited time.Duration, tries int) {
	if err != nil {
		err.Message = fmt.Sprintf("the server was still restarting after %s (%d tries): %s", waited.Round(time.Millisecond), tries, err.Message)
	}
}
