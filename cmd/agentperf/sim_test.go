package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSimCommand runs `agentperf sim` on a free port, serves one request,
// and stops it by cancelling the context as SIGINT does.
func TestSimCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errw syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- runMain(ctx, []string{"sim", "--port", "0", "--zero-latency", "--model", "demo", "--max-model-len", "8192"}, &out, &errw)
	}()
	re := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+) `)
	var url string
	deadline := time.Now().Add(10 * time.Second)
	for url == "" {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case c := <-code:
			t.Fatalf("sim exited with %d before serving: %s %s", c, out.String(), errw.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sim did not print its address: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"ignore_eos":true}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"completion_tokens":3`) {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case c := <-code:
		if c != exitOK {
			t.Errorf("exit code %d after cancel, want 0; stderr %s", c, errw.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sim did not stop after cancel")
	}
	if !strings.Contains(out.String(), "stopped after 1 requests (1 completed") {
		t.Errorf("final line missing: %q", out.String())
	}
}

func TestSimCommandUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--max-model-len", "x"},
		{"sim", "--overflow-wording", "nope"},
		{"sim", "--port", "70000"},
		{"sim", "extra"},
		{"sim", "--kv-capacity-tokens", "100"},
	} {
		var out, errw bytes.Buffer
		if c := runMain(context.Background(), args, &out, &errw); c != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, c, exitUsage, errw.String())
		}
	}
}
