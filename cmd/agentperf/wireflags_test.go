package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
)

// TestFlagsReachTheWire: the settings the CLI binds through the library's
// tables (run.Settings, run.TextSettings) reach every request: -H
// headers, --extra-inputs fields and Dynamo's session control with its
// timeout.
func TestFlagsReachTheWire(t *testing.T) {
	var (
		mu      sync.Mutex
		bodies  [][]byte
		headers []string
	)
	front := simBehind(t, 1, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				b, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(b))
				mu.Lock()
				bodies, headers = append(bodies, b), append(headers, r.Header.Get("X-Team"))
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	})

	code, _, stderr := runCLI(t, "profile", "--url", front.URL, "--model", "demo", "--tokenizer", "builtin", "--streaming",
		"--public-dataset", "synthetic:seed=5,traces=4,time-scale=0.01", "--concurrency", "2", "--benchmark-duration", "1",
		"--no-server-metrics", "--no-gpu-telemetry", "--no-plot", "--ui-type", "none", "--output-artifact-dir", t.TempDir(),
		"-H", "X-Team: a", "--extra-inputs", "temperature:0.5", "--use-dynamo-conv-aware-routing", "--dynamo-session-timeout-seconds", "77")
	if code != 0 {
		t.Fatalf("profile exit %d: %s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) == 0 {
		t.Fatal("no request reached the server")
	}
	for i, b := range bodies {
		var body struct {
			Temperature *float64 `json:"temperature"`
			Nvext       struct {
				SessionControl struct {
					Timeout int `json:"timeout"`
				} `json:"session_control"`
			} `json:"nvext"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if headers[i] != "a" || body.Temperature == nil || *body.Temperature != 0.5 || body.Nvext.SessionControl.Timeout != 77 {
			t.Fatalf("request %d of %d: X-Team %q, temperature %v, session timeout %d; want a, 0.5, 77\n%s", i+1, len(bodies), headers[i], body.Temperature, body.Nvext.SessionControl.Timeout, b)
		}
	}
}
