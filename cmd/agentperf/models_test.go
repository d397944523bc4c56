package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/server/sim"
)

// TestProfileDiscoversModel: without --model, profile asks the server's
// /v1/models. The in-process simulator serves one model, so the run uses
// it (the simulator answers any other model with a 404, so requests that
// succeed prove it was sent) and the run log says where it came from.
func TestProfileDiscoversModel(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	code, out, errOut := runProfileCLI(context.Background(), t, "profile",
		"--url", "sim://?zero-latency=true&model=served-by-sim", "--public-dataset", "synthetic:traces=4",
		"--concurrency", "2", "--benchmark-duration", "1", "--streaming",
		"--output-artifact-dir", dir, "--ui-type", "none", "--no-plot")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out+errOut, `no --model: the server at sim://?zero-latency=true&model=served-by-sim serves "served-by-sim"`) {
		t.Errorf("the run log does not say where the model came from:\n%s\n%s", out, errOut)
	}
	agg := checkArtifacts(t, dir)
	md, _ := agg["metadata"].(map[string]any)
	acc, _ := md["request_accounting"].(map[string]any)
	if acc == nil {
		t.Fatalf("no metadata.request_accounting in the aggregate")
	}
	if ok, _ := acc["profiling_ok"].(float64); ok < 1 || acc["profiling_errors"] != 0.0 {
		t.Errorf("request_accounting %v: want requests that succeeded with the discovered model, no error", acc)
	}
}

// TestProfileModelDiscoveryErrors: a server that lists several models, or
// none, is a usage error (exit 2) that names the URL and says to pass
// --model; nothing runs.
func TestProfileModelDiscoveryErrors(t *testing.T) {
	clearAIPerfEnv(t)
	for body, want := range map[string]string{
		`{"object":"list","data":[{"id":"a"},{"id":"b"}]}`: "lists 2 models (a, b)",
		`{"object":"list","data":[]}`:                      "lists no model",
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/models" {
				t.Errorf("request to %s %s: nothing but /v1/models may be asked", r.Method, r.URL.Path)
			}
			w.Write([]byte(body))
		}))
		code, _, errOut := runProfileCLI(context.Background(), t, "profile", "--url", srv.URL,
			"--public-dataset", "synthetic:traces=4", "--concurrency", "1", "--benchmark-duration", "1",
			"--output-artifact-dir", t.TempDir(), "--ui-type", "none")
		srv.Close()
		if code != exitUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, srv.URL+"/v1/models") || !strings.Contains(errOut, "--model NAME") {
			t.Errorf("%s: exit %d, stderr %q: want %d naming %s/v1/models, %q and --model NAME", body, code, errOut, exitUsage, srv.URL, want)
		}
	}
}

// TestProfileApplyChatTemplate runs with --apply-chat-template as InferenceX
// passes it: the run reads the model's chat template (the real Qwen3
// tokenizer_config.json beside its tokenizer), logs what it adds, records
// the flag in input_config, and the requests on the wire are unchanged:
// chat messages to /v1/chat/completions, never a rendered prompt, as in
// aiperf.
func TestProfileApplyChatTemplate(t *testing.T) {
	clearAIPerfEnv(t)
	tokPath := testshared.Path(t, "tokenizers/qwen3.tokenizer.json.zst")
	cfg := sim.DefaultConfig()
	cfg.Model, cfg.ZeroLatency = "qwen", true
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	var paths []string
	var bodies int
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path)
		if bytes.Contains(b, []byte(`"messages":[{"role":"system"`)) && !bytes.Contains(b, []byte(`"prompt"`)) && !bytes.Contains(b, []byte("<|im_start|>")) {
			bodies++
		}
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	code, out, errOut := runProfileCLI(context.Background(), t, "profile",
		"--url", srv.URL, "--model", "qwen", "--tokenizer", tokPath, "--apply-chat-template",
		"--public-dataset", "synthetic:traces=4", "--concurrency", "2", "--benchmark-duration", "1", "--streaming",
		"--output-artifact-dir", dir, "--ui-type", "none", "--no-plot", "--no-server-metrics")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out+errOut, "--apply-chat-template: the chat template of "+filepath.Join(filepath.Dir(tokPath), "qwen3.tokenizer_config.json")+" adds 13 tokens") {
		t.Errorf("the run log does not report the template:\n%s\n%s", out, errOut)
	}
	agg := checkArtifacts(t, dir)
	if ic, _ := agg["input_config"].(map[string]any); ic["apply_chat_template"] != true {
		t.Errorf("input_config.apply_chat_template = %v, want true", ic["apply_chat_template"])
	}
	mu.Lock()
	defer mu.Unlock()
	completions := 0
	for _, p := range paths {
		if p == "/v1/chat/completions" {
			completions++
		} else if p != "/metrics" && p != "/v1/models" {
			t.Errorf("a request went to %s, want /v1/chat/completions", p)
		}
	}
	if completions == 0 || bodies != completions {
		t.Errorf("%d of %d requests carried chat messages and no rendered prompt, want all", bodies, completions)
	}
}
