package replay

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
)

// TestServerClosesIdleConnections: servers close a keep-alive connection
// that stays idle (uvicorn, which vLLM and SGLang run on, after 5 s); a
// lane whose think time is longer finds its connection closed. The next
// request goes out on a new connection and never fails for it. A server
// that keeps its connections open keeps serving each lane on one, over
// plain TCP and TLS alike (the idle check does not mistake a live
// connection for a closed one).
func TestServerClosesIdleConnections(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tls         bool
		idleTimeout time.Duration
	}{
		{"http, server closes idle", false, 30 * time.Millisecond},
		{"https, server closes idle", true, 30 * time.Millisecond},
		{"http, server keeps", false, time.Minute},
		{"https, server keeps", true, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(newZeroSim(t).Handler())
			srv.Config.IdleTimeout = tc.idleTimeout
			var conns atomic.Int64
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			if tc.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)

			// Think times of 150 ms, five times the short idle timeout.
			traces := dataset.Synthesize(dataset.SynthOptions{Seed: 3, Traces: 2, MinTurns: 6, MaxTurns: 6, TimeScale: 0.001})
			for i := range traces {
				for k := range traces[i].Requests {
					traces[i].Requests[k].T = 0.15 * float64(k)
					traces[i].Requests[k].ThinkTime = 0.15
					traces[i].Requests[k].APITime = 0.001
				}
			}
			sink, ovf := &memSink{}, &memSink{}
			cfg := testConfig(t, srv.URL, traces, sink, ovf)
			cfg.Insecure = tc.tls // the test server's own certificate
			cfg.Concurrency = 2
			cfg.StartMinRatio, cfg.StartMaxRatio = 0, 0
			cfg.BenchmarkDuration = 700 * time.Millisecond
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Accounting.ProfilingErrors != 0 || res.Accounting.WarmupErrors != 0 {
				for _, r := range sink.records() {
					if r.Error != nil {
						t.Logf("%s turn %d: %s: %s", r.SourceTraceID, r.TurnIndex, r.Error.Type, r.Error.Message)
					}
				}
				t.Fatalf("accounting %+v: requests failed on connections the server had closed while idle", res.Accounting)
			}
			if res.Accounting.ProfilingOK < 4 {
				t.Fatalf("only %d profiling requests; want several after idle gaps", res.Accounting.ProfilingOK)
			}
			n := conns.Load()
			switch {
			case tc.idleTimeout > time.Second && n != int64(cfg.Concurrency):
				t.Fatalf("%d connections for %d lanes: a connection the server kept open was not reused", n, cfg.Concurrency)
			case tc.idleTimeout < time.Second && n <= int64(cfg.Concurrency):
				t.Fatalf("%d connections for %d lanes: the server's idle close did not happen, the test tests nothing", n, cfg.Concurrency)
			}
		})
	}
}
