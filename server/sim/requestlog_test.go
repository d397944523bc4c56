package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/text/tokenizer"
)

// syncBuffer is a bytes.Buffer safe for the server's handler goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) entries(t *testing.T) []RequestLogEntry {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []RequestLogEntry
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		var e RequestLogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("request log line %q is not JSON: %v", sc.Bytes(), err)
		}
		out = append(out, e)
	}
	return out
}

// TestRequestLog checks the one line per completion request a benchmark
// reads: ids, arrival and first-byte times, the rendered and the
// template-free prompt token counts, and the status of refused requests.
func TestRequestLog(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	cfg := fastTimed()
	cfg.RequestLog = &log
	s := startSim(t, cfg)
	msgs := []msg{{"system", "You are a careful agent."}, {"user", words("log", 40)}}
	before := time.Now()
	mustDo(t, s, "/v1/chat/completions", chatReq{Messages: msgs, MaxTokens: 3, IgnoreEOS: true, Stream: true},
		map[string]string{"X-Request-ID": "r-1", "X-Correlation-ID": "sess \"a\""})
	after := time.Now()
	resp, _, err := do(t, s, "/v1/chat/completions", chatReq{Model: "other", Messages: msgs, MaxTokens: 3}, map[string]string{"X-Request-ID": "r-2"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d, want 404", resp.StatusCode)
	}

	got := log.entries(t)
	if len(got) != 2 {
		t.Fatalf("%d log lines, want 2: %+v", len(got), got)
	}
	e := got[0]
	if e.N != 1 || e.RequestID != "r-1" || e.CorrelationID != "sess \"a\"" || e.Status != http.StatusOK {
		t.Errorf("first line = %+v", e)
	}
	if e.ArrivalNs < before.UnixNano() || e.FirstByteNs < e.ArrivalNs || e.FirstByteNs > after.UnixNano() {
		t.Errorf("arrival %d, first byte %d; want before ≤ arrival ≤ first byte ≤ after (%d, %d)", e.ArrivalNs, e.FirstByteNs, before.UnixNano(), after.UnixNano())
	}
	tok := tokenizer.Builtin()
	content := 0
	for _, m := range msgs {
		content += len(tok.Encode(m.Content))
	}
	if e.PromptTokens != promptLen(msgs) || e.ContentTokens != content {
		t.Errorf("prompt/content tokens = %d/%d, want %d/%d", e.PromptTokens, e.ContentTokens, promptLen(msgs), content)
	}
	r := got[1]
	if r.RequestID != "r-2" || r.Status != http.StatusNotFound || r.PromptTokens != -1 || r.FirstByteNs != 0 {
		t.Errorf("refused request's line = %+v", r)
	}
}

// TestRequestLogFile: lines written from many goroutines reach the file
// whole after Flush; nothing reaches it before.
func TestRequestLogFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "req.jsonl")
	l, err := CreateRequestLog(p)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				fmt.Fprintf(l, "{\"g\":%d,\"j\":%d}\n", i, j)
			}
		}()
	}
	wg.Wait()
	if b, _ := os.ReadFile(p); len(b) != 0 {
		t.Errorf("%d bytes reached the file before Flush", len(b))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, ln := range lines {
		if !json.Valid([]byte(ln)) {
			t.Fatalf("torn line %q", ln)
		}
	}
	if len(lines) != 800 {
		t.Errorf("%d lines, want 800", len(lines))
	}
	if _, err := CreateRequestLog(filepath.Join(p, "x")); err == nil {
		t.Error("a log under a file was created")
	}
}
