package replay

import (
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/timing"
)

// Warmup retries (docs/warmup-retries.md). A warmup request that fails
// with a transient error (HTTP 429 or 5xx, a connection reset, a stream cut
// before its end) is sent again after a pause, up to the budget; every
// attempt is its own record (a failed one in the warmup-error bucket,
// counted as sent), and the replay core sees only the request's final
// outcome. Profiling requests are never retried (aiperf does not either:
// a failed profiling request is a measured failure).

// Defaults of the warmup retry budget.
const (
	// DefaultWarmupRetries is how many times a warmup request is sent
	// again after a transient failure (5 attempts in all).
	DefaultWarmupRetries = 4
	// DefaultWarmupRetryBackoff is the pause before the first retry; it
	// doubles for each further one (1 s, 2 s, 4 s, 8 s: 15 s in all at
	// most), each drawn between half and all of it (jitter, so that lanes
	// failing together do not retry together).
	DefaultWarmupRetryBackoff = time.Second
	// maxRetryPause caps one pause.
	maxRetryPause = 30 * time.Second
	// retryLogLines is how many retries are logged one by one; the rest
	// are counted in the warmup's summary line.
	retryLogLines = 5
)

// transient reports whether a failure is worth sending the request again:
// the server said "later" (429), failed on its side (5xx, also as an
// error event in the stream), or the connection was reset or the stream
// cut short. A timeout is not (it already waited the request timeout), nor
// a refused connection (nothing listens there: a wrong URL, or a server
// not up, which its start-up script must wait for), nor a 4xx other than
// 429, a malformed response, a prompt that could not be built, a
// cancellation or a context overflow.
func transient(e *metrics.Error) bool {
	if e == nil {
		return false
	}
	switch e.Category {
	case metrics.CategoryHTTP, metrics.CategoryStreamError:
		return e.Code == 429 || (e.Code >= 500 && e.Code <= 599)
	case metrics.CategoryTransport:
		return e.Type == errTypeConnectionReset || e.Type == errTypeIncompleteStream
	}
	return false
}

// The error types of client.go that transient matches.
const (
	errTypeConnectionReset  = "ConnectionReset"
	errTypeIncompleteStream = "IncompleteStream"
)

// notTransientReason says why a failure is not retried.
func notTransientReason(e *metrics.Error) string {
	switch {
	case e == nil:
		return "no error"
	case e.Category == metrics.CategoryHTTP && e.Code >= 400 && e.Code < 500:
		return "an HTTP 4xx other than 429 is the request's own fault and would fail again"
	case e.Category == metrics.CategoryTimeout:
		return "a timeout already waited the whole request timeout"
	case e.Type == "ConnectionRefused":
		return "nothing accepts connections at the URL (is the server up, and is the URL right?)"
	}
	return "this kind of failure (" + e.Category + ") is not transient"
}

// retryable reports whether the failed attempt rec of send s is retried.
func (e *engine) retryable(s *timing.Send, rec *metrics.Record, attempt int) bool {
	return s.Phase == timing.Warmup && rec.Bucket == metrics.BucketWarmupError &&
		attempt <= e.c.WarmupRetries && transient(rec.Error) && !e.stopped()
}

// retryPause logs the retry and waits before attempt+1; it returns false
// when the run stopped meanwhile (no retry is then sent).
func (e *engine) retryPause(l *lane, s *timing.Send, rec *metrics.Record, attempt int) bool {
	c := e.c
	d := e.retryDelay(attempt, rec.XRequestID)
	if n := e.warmRetriesLogged.Add(1); n <= retryLogLines {
		more := ""
		if n == retryLogLines {
			more = " (further retries are counted, not logged)"
		}
		c.Logf("warmup: request on lane %d (trace %s, %s turn %d) failed: %s%s: %s; retry %d of %d in %s%s",
			s.Lane, c.Traces[s.Trace].ID, s.Plan.Streams[s.Stream].ConvID, s.Turn, codePrefix(rec.Error.Code), rec.Error.Type,
			shorten(rec.Error.Message, 200), attempt, c.WarmupRetries, d.Round(time.Millisecond), more)
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

// retryDelay is the pause before retry number attempt (1-based): the
// backoff doubled attempt−1 times, capped, with jitter in [½, 1) of it
// drawn from the run's seed and the request id (deterministic for a given
// request, different across requests); none when the backoff is 0.
func (e *engine) retryDelay(attempt int, requestID string) time.Duration {
	if e.c.WarmupRetryBackoff <= 0 {
		return 0
	}
	d := e.c.WarmupRetryBackoff << (attempt - 1)
	if d <= 0 || d > maxRetryPause {
		d = maxRetryPause
	}
	h := uint64(e.c.Seed)*0x9e3779b97f4a7c15 ^ uint64(attempt)
	for i := 0; i < len(requestID); i++ {
		h = (h ^ uint64(requestID[i])) * 0x100000001b3
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	frac := float64(h>>11) / float64(1<<53) // [0, 1)
	return d/2 + time.Duration(frac*float64(d/2))
}

// shorten cuts s to at most n bytes for a log line.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// logWarmupRetries logs how many warmup attempts were retried, when any.
func (e *engine) logWarmupRetries() {
	if n := e.tally.Counts().Warmup.Retried; n > 0 {
		e.c.Logf("warmup: %d failed attempts were retried (every attempt is a record; the failed ones are warmup errors)", n)
	}
}
