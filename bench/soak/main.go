// Command soak runs the replay engine for a long time against the
// in-process simulator with injected faults and shows that nothing grows:
// it samples the goroutine count, the live heap and the RSS every
// -sample, prints one table row per sample, and checks at the end that
// goroutines and heap stayed within the in-flight set, that every request
// is accounted for, and that the process is back to its baseline once the
// run and the simulator are closed.
//
// Usage (bench/soak.sh wraps it):
//
//	go run ./bench/soak -lanes 2000 -duration 10m -fault-rate 0.01
//
// Records go to a counting sink, not to a Collector, so that the memory
// measured is the engine's, not the exporter's per-record storage.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/tokenizer"
	"github.com/agentperf/agentperf/timing"
)

// countSink counts records by kind and error category and keeps none.
type countSink struct {
	mu                                        sync.Mutex
	total, warmup, profOK, profErr, cancelled int
	overflow                                  int
	byCategory                                map[string]int
}

func (s *countSink) Add(r *metrics.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	switch {
	case r.ContextOverflow:
		s.overflow++
	case r.Cancelled:
		s.cancelled++
	case r.Phase == metrics.PhaseWarmup:
		s.warmup++
	case r.Error != nil:
		s.profErr++
	default:
		s.profOK++
	}
	if r.Error != nil {
		s.byCategory[r.Error.Category+"/"+r.Error.Type]++
	}
}

// goroutineDump returns the stacks of every goroutine.
func goroutineDump() []byte {
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	return b.Bytes()
}

// newSim returns a simulator configured by a sim:// URL, serving "soak".
func newSim(u string) (*sim.Server, error) {
	cfg, err := sim.ParseURL(u, sim.DefaultConfig())
	if err != nil {
		return nil, err
	}
	cfg.Model = "soak"
	return sim.New(cfg)
}

type sample struct {
	at                  time.Duration
	goroutines          int
	heapMB, rssMB       float64
	inFlight, sent, err int64
}

func take(start time.Time, p *replay.Progress) sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := sample{at: time.Since(start).Round(time.Second), goroutines: runtime.NumGoroutine(),
		heapMB: float64(ms.HeapAlloc) / (1 << 20), rssMB: rssMB()}
	if p != nil {
		c := p.Counts()
		s.inFlight, s.sent, s.err = int64(c.InFlight), int64(c.Sent), int64(c.Errors())
	}
	return s
}

// rssMB reads VmRSS from /proc/self/status (0 where there is none).
func rssMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func main() {
	lanes := flag.Int("lanes", 2000, "concurrent lanes")
	duration := flag.Duration("duration", 10*time.Minute, "profiling duration")
	every := flag.Duration("sample", 10*time.Second, "sampling interval")
	faultRate := flag.Float64("fault-rate", 0.01, "total fault probability per request, spread over seven fault modes")
	traces := flag.Int("traces", 400, "synthetic traces (lanes wrap over them)")
	maxContext := flag.Int("max-context", 32768, "peak context of the synthetic traces, tokens")
	delayCap := flag.Duration("delay-cap", 10*time.Second, "inter-turn delay cap (the recorded think times are real-corpus magnitudes)")
	flag.Parse()
	if err := soak(*lanes, *duration, *every, *faultRate, *traces, *maxContext, *delayCap); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func soak(lanes int, duration, every time.Duration, faultRate float64, nTraces, maxContext int, delayCap time.Duration) error {
	start := time.Now()
	base := take(start, nil)

	// The simulators: zero latency (the engine is what is measured), every
	// fault mode except the down window, a short stall that ends by itself.
	r := faultRate / 7
	q := fmt.Sprintf("sim://?zero-latency=true&fault-500-rate=%g&fault-503-rate=%g&fault-reset-before-headers-rate=%g&fault-reset-mid-stream-rate=%g&fault-malformed-sse-rate=%g&fault-stream-error-rate=%g&fault-stall-rate=%g&fault-stall-for=2s",
		r, r, r, r, r, r, r)
	faulty, err := newSim(q)
	if err != nil {
		return err
	}
	// A failed warmup request aborts a run by design, so the warmup (the
	// first request of every lane) goes to a fault-free simulator and every
	// later request to the faulty one.
	clean, err := newSim("sim://?zero-latency=true")
	if err != nil {
		return err
	}
	var seq atomic.Int64
	cleanH, faultyH := clean.Handler(), faulty.Handler()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" && seq.Add(1) <= int64(lanes) {
			cleanH.ServeHTTP(w, r)
			return
		}
		faultyH.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	url := "http://" + ln.Addr().String()

	corpus := dataset.Synthesize(dataset.SynthOptions{Seed: 11, Traces: nTraces, MinTurns: 20, MaxTurns: 80, MaxContext: maxContext})
	sink := &countSink{byCategory: map[string]int{}}
	prog := &replay.Progress{}
	out, err := os.MkdirTemp("", "soak")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	spec := run.NewSpec()
	spec.Corpus.Traces, spec.Tokenizer.Given, spec.OutputDir = corpus, tokenizer.Builtin(), out
	spec.ServerMetrics.Off, spec.NoPlot, spec.Log = true, true, os.Stderr
	cfg := &spec.Replay
	cfg.Generation = timing.V02 // per-turn think times under the delay cap
	cfg.URL, cfg.Models, cfg.LiveAssistant = url, []string{"soak"}, false
	cfg.Concurrency, cfg.Seed, cfg.BenchmarkDuration, cfg.GracePeriod = lanes, 1, duration, 10*time.Second
	cfg.InterTurnDelayCap, cfg.Streaming, cfg.IgnoreEOS, cfg.UseServerTokenCount = delayCap, true, true, true
	cfg.RequestTimeout, cfg.Sink, cfg.Progress = 60*time.Second, sink, prog

	fmt.Printf("soak: %d lanes, %s, fault rate %.2f %% over 7 modes, %d traces (peak context %d), delay cap %s\n",
		lanes, duration, 100*faultRate, nTraces, maxContext, delayCap)
	fmt.Printf("baseline before the run: %d goroutines, heap %.1f MB, RSS %.1f MB\n\n", base.goroutines, base.heapMB, base.rssMB)
	fmt.Printf("| %6s | %10s | %9s | %9s | %9s | %9s | %7s |\n", "t", "goroutines", "in-flight", "heap MB", "RSS MB", "sent", "errors")
	fmt.Printf("|%s|%s|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 8), strings.Repeat("-", 12), strings.Repeat("-", 11), strings.Repeat("-", 11), strings.Repeat("-", 11), strings.Repeat("-", 11), strings.Repeat("-", 9))

	var samples []sample
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s := take(start, prog)
				samples = append(samples, s)
				fmt.Printf("| %6s | %10d | %9d | %9.1f | %9.1f | %9d | %7d |\n", s.at, s.goroutines, s.inFlight, s.heapMB, s.rssMB, s.sent, s.err)
			}
		}
	}()
	o, err := run.Run(context.Background(), spec)
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	res := o.Result
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	hs.Shutdown(ctx)
	cancel()
	clean.Close()
	faulty.Close()
	time.Sleep(time.Second) // let closed connections' goroutines exit
	runtime.GC()            // the second GC in take empties sync.Pool victim caches
	after := take(start, nil)

	var fails []string
	a := res.Accounting
	fmt.Printf("\naccounting: sent %d = profiling %d ok + %d failed, warmup %d ok + %d failed, %d overflows, %d cancelled\n",
		a.Sent, a.ProfilingOK, a.ProfilingErrors, a.WarmupOK, a.WarmupErrors, a.Overflows, a.Cancelled)
	if err := a.Check(); err != nil {
		fails = append(fails, err.Error())
	}
	if sink.total != a.Sent || sink.profOK != a.ProfilingOK || sink.profErr != a.ProfilingErrors || sink.cancelled != a.Cancelled || sink.overflow != a.Overflows {
		fails = append(fails, fmt.Sprintf("sink saw %d records (%d ok, %d failed, %d cancelled, %d overflows), accounting %+v", sink.total, sink.profOK, sink.profErr, sink.cancelled, sink.overflow, a))
	}
	fmt.Printf("errors by category/type (%d = %.2f %% of sent; the sim injected %v):\n", a.ProfilingErrors+a.WarmupErrors, 100*float64(a.ProfilingErrors+a.WarmupErrors)/float64(max(a.Sent, 1)), faulty.Stats().Faults)
	for k, n := range sink.byCategory {
		fmt.Printf("  %-45s %d\n", k, n)
	}
	if res.Aborted != "" {
		fails = append(fails, "run aborted: "+res.AbortMessage)
	}

	// Growth: compare the last third of the samples with the first third
	// after the first sample (start-up). Goroutines may differ by the
	// change in requests in flight (each holds a server handler and a
	// connection) plus a small slack; the live heap by 25 % + 16 MB.
	if n := len(samples); n >= 4 {
		steady := samples[1:]
		third := max(len(steady)/3, 1)
		first, last := steady[:third], steady[len(steady)-third:]
		maxG := func(ss []sample) (g int, inf int64, h float64) {
			for _, s := range ss {
				g, inf, h = max(g, s.goroutines), max(inf, s.inFlight), max(h, s.heapMB)
			}
			return
		}
		g0, f0, h0 := maxG(first)
		g1, f1, h1 := maxG(last)
		allowed := g0 + 3*int(max(f1-f0, 0)) + 50
		fmt.Printf("\ngoroutines: max %d early, %d late (in flight %d → %d; allowed ≤ %d)\n", g0, g1, f0, f1, allowed)
		fmt.Printf("live heap:  max %.1f MB early, %.1f MB late (allowed ≤ %.1f MB)\n", h0, h1, h0*1.25+16)
		if g1 > allowed {
			fails = append(fails, fmt.Sprintf("goroutines grew from %d to %d beyond the in-flight change", g0, g1))
		}
		if h1 > h0*1.25+16 {
			fails = append(fails, fmt.Sprintf("live heap grew from %.1f MB to %.1f MB", h0, h1))
		}
	} else {
		fmt.Println("\n(fewer than 4 samples: growth not judged; run longer or sample more often)")
	}
	// Nothing of the run may outlive it: every connection is closed and
	// every lane, slot and request goroutine has returned.
	fmt.Printf("after the run and the simulator closed: %d goroutines (baseline %d), heap %.1f MB\n", after.goroutines, base.goroutines, after.heapMB)
	if after.goroutines > base.goroutines+10 {
		fails = append(fails, fmt.Sprintf("%d goroutines left after the run (baseline %d); their stacks are on stderr", after.goroutines, base.goroutines))
		os.Stderr.Write(goroutineDump())
	}
	if len(fails) > 0 {
		for _, f := range fails {
			fmt.Println("FAIL:", f)
		}
		return fmt.Errorf("%d check(s) failed", len(fails))
	}
	fmt.Println("PASS: no growth beyond the in-flight set; accounting exact; back to baseline after the run")
	return nil
}
