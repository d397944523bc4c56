package servermetrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentperf/agentperf/server/sim"
)

func TestResetPrefixCacheEndpoints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		routes   map[string]int // path → status
		wantPath string
		wantErr  string
		wantNone bool
	}{
		{name: "vllm", routes: map[string]int{ResetPathVLLM: 200}, wantPath: ResetPathVLLM},
		{name: "sglang", routes: map[string]int{ResetPathSGLang: 200}, wantPath: ResetPathSGLang},
		{name: "sglang-405-on-vllm-path", routes: map[string]int{ResetPathVLLM: 405, ResetPathSGLang: 200}, wantPath: ResetPathSGLang},
		{name: "neither", routes: map[string]int{}, wantNone: true},
		{name: "sglang-busy", routes: map[string]int{ResetPathSGLang: 400}, wantErr: "status 400"},
		{name: "unauthorized", routes: map[string]int{ResetPathVLLM: 401}, wantErr: "status 401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				st, ok := tc.routes[r.URL.Path]
				if !ok || r.Method != http.MethodPost {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(st)
				fmt.Fprint(w, "answer body")
			}))
			defer srv.Close()
			path, err := ResetPrefixCache(context.Background(), srv.URL+"/v1", ResetOptions{Client: srv.Client()})
			switch {
			case tc.wantNone:
				if !errors.Is(err, ErrNoResetEndpoint) {
					t.Fatalf("err = %v, want ErrNoResetEndpoint", err)
				}
				if !strings.Contains(err.Error(), ResetPathVLLM) || !strings.Contains(err.Error(), ResetPathSGLang) {
					t.Errorf("error %q does not name both paths tried", err)
				}
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, ErrNoResetEndpoint) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
			default:
				if err != nil || path != tc.wantPath {
					t.Fatalf("ResetPrefixCache = %q, %v; want %q", path, err, tc.wantPath)
				}
			}
		})
	}
}

// gaugeServer serves /metrics whose running gauge counts down by one per
// read, starting from start; names selects the vLLM or SGLang names.
func gaugeServer(t *testing.T, start int64, running, waiting string) *httptest.Server {
	var left atomic.Int64
	left.Store(start)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := left.Load()
		if n > 0 {
			left.Add(-1)
		}
		if running != "" {
			fmt.Fprintf(w, "# TYPE %s gauge\n%s{engine=\"0\"} %d\n%s{engine=\"1\"} 0\n", running, running, n, running)
		}
		if waiting != "" {
			fmt.Fprintf(w, "# TYPE %s gauge\n%s{engine=\"0\"} 0\n", waiting, waiting)
		}
		fmt.Fprint(w, "# TYPE other gauge\nother 3\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWaitIdle(t *testing.T) {
	t.Parallel()
	fast := ResetOptions{Poll: time.Millisecond, DrainTimeout: time.Minute}
	t.Run("vllm-drains", func(t *testing.T) {
		t.Parallel()
		srv := gaugeServer(t, 3, "vllm:num_requests_running", "vllm:num_requests_waiting")
		if err := WaitIdle(context.Background(), srv.URL, fast); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("sglang-drains", func(t *testing.T) {
		t.Parallel()
		srv := gaugeServer(t, 2, "sglang:num_running_reqs", "sglang:num_queue_reqs")
		if err := WaitIdle(context.Background(), srv.URL, fast); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no-gauges", func(t *testing.T) {
		t.Parallel()
		srv := gaugeServer(t, 0, "", "")
		err := WaitIdle(context.Background(), srv.URL, fast)
		if err == nil || !strings.Contains(err.Error(), "cannot tell when the server is idle") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("never-drains", func(t *testing.T) {
		t.Parallel()
		srv := gaugeServer(t, 1<<40, "vllm:num_requests_running", "")
		err := WaitIdle(context.Background(), srv.URL, ResetOptions{Poll: time.Millisecond, DrainTimeout: 20 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "did not drain") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestResetAndDrainSim: against the simulator with requests in flight,
// ResetAndDrain returns only once they finished and its reset reaches
// every engine.
func TestResetAndDrainSim(t *testing.T) {
	t.Parallel()
	cfg := sim.DefaultConfig()
	cfg.Engines = 2
	cfg.DecodeBaseMs = 2
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); chat(t, s.URL, "drain-test", i, 40) }()
	}
	// Wait until the sim saw them, so the drain has something to wait for.
	for s.Stats().Requests < 4 {
		time.Sleep(time.Millisecond)
	}
	path, err := ResetAndDrain(context.Background(), s.URL, ResetOptions{Poll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if path != ResetPathVLLM || st.CacheResets != 2 {
		t.Errorf("path %q, CacheResets %d; want %s and one reset per engine (2)", path, st.CacheResets, ResetPathVLLM)
	}
	if fin := st.Finished["length"]; fin != 4 || st.Running != 0 || st.Waiting != 0 {
		t.Errorf("after the drain: finished %d, running %d, waiting %d; want 4, 0, 0", fin, st.Running, st.Waiting)
	}
	wg.Wait()
}
