// Package promexport serves a run's client-side figures live in the
// Prometheus exposition format (--metrics-listen ADDR), with the official
// client library (prometheus/client_golang): requests by phase and
// outcome and in flight, TTFT, ITL and end-to-end latency histograms,
// input and output tokens, scheduling lateness, the failed-request
// threshold's ratio, the run's phase and the profiling time left
// (docs/metrics-listen.md, which also has a Grafana dashboard).
//
// An Exporter is a consumer plugged in at the edge of a run: a
// metrics.Sink (every record) and a replay.Observer (the phase changes),
// reading the run's tally for the requests in flight. One endpoint serves
// one process, so a sharded run has one per shard, each labelled with its
// shard.
package promexport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentperf/agentperf/metrics"
)

// Namespace prefixes every metric name.
const Namespace = "agentperf"

// The phases, as the phase and phase-label values say them.
const (
	PhaseStarting  = "starting"
	PhaseWarmup    = "warmup"
	PhaseProfiling = "profiling"
	PhaseDone      = "done"
)

var phases = []string{PhaseStarting, PhaseWarmup, PhaseProfiling, PhaseDone}

// Options configure an Exporter.
type Options struct {
	// Tally is the run's tally (replay.Progress.Tally): the requests in
	// flight and the failure ratio are read from it. Nil: those two are
	// not exported.
	Tally *metrics.Tally
	// Threshold is --failed-request-threshold (0 = off), exported beside
	// the ratio it judges.
	Threshold float64
	// Shard, when set ("I/N" of a sharded run), labels every series
	// shard="I/N".
	Shard string
	// Clock returns the time; nil means time.Now.
	Clock func() time.Time
	// Logf receives the error that stops the server, if one does; nil
	// discards it.
	Logf func(format string, args ...any)
}

// Exporter holds the run's Prometheus metrics and serves them.
type Exporter struct {
	reg   *prometheus.Registry
	clock func() time.Time
	logf  func(string, ...any)

	requests            *prometheus.CounterVec
	ttft, itl, e2e, lat *prometheus.HistogramVec
	inTok, outTok       *prometheus.CounterVec

	phase    atomic.Value // string
	deadline atomic.Int64 // Unix ns of the profiling deadline; 0 unknown

	srv *http.Server
	ln  net.Listener
}

// New returns an Exporter with its metrics registered on a registry of
// its own (no global state); it serves nothing until Listen.
func New(o Options) *Exporter {
	e := &Exporter{reg: prometheus.NewRegistry(), clock: o.Clock, logf: o.Logf}
	if e.clock == nil {
		e.clock = time.Now
	}
	if e.logf == nil {
		e.logf = func(string, ...any) {}
	}
	e.phase.Store(PhaseStarting)
	var r prometheus.Registerer = e.reg
	if o.Shard != "" {
		r = prometheus.WrapRegistererWith(prometheus.Labels{"shard": o.Shard}, r)
	}
	f := func(c prometheus.Collector) { r.MustRegister(c) }
	e.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "requests_total",
		Help: "Requests finished, by phase (warmup, profiling) and outcome (ok, error, context_overflow, cancelled); a retried warmup attempt is an error of its own."},
		[]string{"phase", "outcome"})
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, []string{"phase"})
	}
	e.ttft = hist("time_to_first_token_seconds", "Time to first token of successful streamed requests.", prometheus.ExponentialBuckets(0.005, 2, 16))
	e.itl = hist("inter_token_latency_seconds", "Mean inter-token latency of each successful streamed request with two or more output tokens.", prometheus.ExponentialBuckets(0.0005, 2, 16))
	e.e2e = hist("request_latency_seconds", "End-to-end latency of successful requests (request sent to last content chunk).", prometheus.ExponentialBuckets(0.05, 2, 16))
	e.lat = hist("schedule_lateness_seconds", "How late each request was sent against its schedule (sent − intended send time), every request.", prometheus.ExponentialBuckets(0.0001, 2, 18))
	e.inTok = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "input_tokens_total",
		Help: "Input tokens (the server's usage) of successful requests."}, []string{"phase"})
	e.outTok = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "output_tokens_total",
		Help: "Output tokens (the server's usage) of successful requests."}, []string{"phase"})
	for _, c := range []prometheus.Collector{e.requests, e.ttft, e.itl, e.e2e, e.lat, e.inTok, e.outTok} {
		f(c)
	}
	for _, p := range []string{PhaseWarmup, PhaseProfiling} {
		for _, o := range []string{"ok", "error", "context_overflow", "cancelled"} {
			e.requests.WithLabelValues(p, o) // every series from the start, at 0
		}
		e.inTok.WithLabelValues(p)
		e.outTok.WithLabelValues(p)
	}
	if t := o.Tally; t != nil {
		f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "requests_in_flight",
			Help: "Requests sent and not finished."}, func() float64 { return float64(t.InFlight()) }))
		f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "failed_request_ratio",
			Help: "Profiling requests that failed over those judged (ok + failed): the ratio --failed-request-threshold judges (0 before any)."},
			func() float64 {
				p := t.Counts().Profiling
				if p.Judged() == 0 {
					return 0
				}
				return float64(p.Errors) / float64(p.Judged())
			}))
	}
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "failed_request_threshold_ratio",
		Help: "The --failed-request-threshold (0 = off)."}, func() float64 { return o.Threshold }))
	for _, p := range phases {
		f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "phase",
			Help: "The run's phase: 1 for the current one (starting, warmup, profiling, done), 0 for the others.", ConstLabels: prometheus.Labels{"phase": p}},
			func() float64 {
				if e.phase.Load().(string) == p {
					return 1
				}
				return 0
			}))
	}
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "profiling_time_left_seconds",
		Help: "Seconds until the profiling deadline (0 before profiling starts and after it ends)."},
		func() float64 {
			d := e.deadline.Load()
			if d == 0 || e.phase.Load().(string) != PhaseProfiling {
				return 0
			}
			return max(0, float64(d-e.clock().UnixNano())/1e9)
		}))
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return e
}

var _ metrics.Sink = (*Exporter)(nil)

// Add counts one record (metrics.Sink).
func (e *Exporter) Add(r *metrics.Record) {
	phase := PhaseProfiling
	if r.Phase == metrics.PhaseWarmup {
		phase = PhaseWarmup
	}
	outcome := "ok"
	switch b := r.Bucket; {
	case b == metrics.BucketUnset:
		b = metrics.BucketOf(r)
		fallthrough
	default:
		switch b {
		case metrics.BucketOverflow:
			outcome = "context_overflow"
		case metrics.BucketCancelled:
			outcome = "cancelled"
		case metrics.BucketProfilingError, metrics.BucketWarmupError:
			outcome = "error"
		}
	}
	e.requests.WithLabelValues(phase, outcome).Inc()
	if r.RequestStartNs > 0 && r.CreditIssuedNs > 0 {
		e.lat.WithLabelValues(phase).Observe(max(0, float64(r.RequestStartNs-r.CreditIssuedNs)/1e9))
	}
	if outcome != "ok" {
		return
	}
	v := metrics.Compute(r)
	obs := func(h *prometheus.HistogramVec, ms float64) {
		if metrics.Has(ms) {
			h.WithLabelValues(phase).Observe(ms / 1e3)
		}
	}
	obs(e.ttft, v.TTFT)
	obs(e.itl, v.ITL)
	obs(e.e2e, v.RequestLatency)
	if metrics.Has(v.ISL) {
		e.inTok.WithLabelValues(phase).Add(v.ISL)
	}
	if metrics.Has(v.OSL) {
		e.outTok.WithLabelValues(phase).Add(v.OSL)
	}
}

// WarmupStarted marks the warmup phase (replay.Observer).
func (e *Exporter) WarmupStarted(requests int, at time.Time) { e.phase.Store(PhaseWarmup) }

// ProfilingStarted marks the profiling phase and its deadline.
func (e *Exporter) ProfilingStarted(start, deadline time.Time) {
	if !deadline.IsZero() {
		e.deadline.Store(deadline.UnixNano())
	}
	e.phase.Store(PhaseProfiling)
}

// ProfilingEnded marks the end of profiling.
func (e *Exporter) ProfilingEnded(at time.Time) { e.phase.Store(PhaseDone) }

// Handler serves the metrics in the Prometheus exposition format.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{Registry: e.reg})
}

// Registry is the exporter's registry (tests gather from it).
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Listen serves /metrics on addr (host:port; port 0 picks one) in the
// background and returns the address bound.
func (e *Exporter) Listen(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.Handler())
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	e.ln = ln
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.logf("warning: --metrics-listen %s stopped serving: %v (the run goes on)", ln.Addr(), err)
		}
	}()
	return ln.Addr().String(), nil
}

// Close stops serving (a scrape in progress is given a second).
func (e *Exporter) Close() error {
	if e.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return e.srv.Shutdown(ctx)
}
