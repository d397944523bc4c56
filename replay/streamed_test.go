package replay

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStreamedTokensCountAsTheyArrive: against a server whose token
// times are known (10 content chunks, 40 ms apart, then usage saying 12
// completion tokens: two tokens more than chunks), Progress.StreamedTokens
// counts each chunk once it is read, while its request is still in
// flight, and adds the two tokens the chunks did not account for when the
// request ends; over the run it totals the records' completion tokens.
// The same run checks Result.PromptOverheadMax (the server's prompt count
// beyond the trace's, here 1,000,000 − in).
// Before, the live rate counted a request's tokens only when it completed.
func TestStreamedTokensCountAsTheyArrive(t *testing.T) {
	t.Parallel()
	const chunks, extra, gap = 10, 2, 40 * time.Millisecond
	prog := &Progress{}
	var (
		mu      sync.Mutex
		emitted int64 // tokens the server has sent, by its own count
		checks  atomic.Int64
		bad     []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := range chunks {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d \"}}]}\n\n", i)
			fl.Flush()
			mu.Lock()
			emitted++
			mu.Unlock()
			time.Sleep(gap)
			// The chunk is counted once the client has read it, while its
			// request is still in flight (this handler has not returned).
			mu.Lock()
			want := emitted
			mu.Unlock()
			deadline := time.Now().Add(3 * time.Second)
			for prog.StreamedTokens() < want && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if got := prog.StreamedTokens(); got < want || got > want {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("after chunk %d of a request in flight: %d streamed tokens counted, the server had sent %d", i+1, got, want))
				mu.Unlock()
			}
			checks.Add(1)
		}
		mu.Lock()
		emitted += extra // before the client can count them
		mu.Unlock()
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":1000000,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", chunks+extra, 1000000+chunks+extra)
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	defer srv.Close()
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 2), sink, ovf)
	cfg.Concurrency = 1
	cfg.BenchmarkDuration = 1200 * time.Millisecond
	cfg.Progress = prog
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, b := range bad {
		t.Error(b)
	}
	if checks.Load() < chunks {
		t.Fatalf("fixture: %d mid-stream checks", checks.Load())
	}
	var total int64
	overhead := 0
	for _, r := range sink.records() {
		if r.Error == nil && r.Usage != nil {
			total += int64(r.Usage.CompletionTokens)
			overhead = max(overhead, r.Usage.PromptTokens-r.RecordedIn)
		}
	}
	// The server's prompt count beyond the trace's (Result.PromptOverheadMax).
	if res.PromptOverheadMax != overhead || overhead <= 0 {
		t.Errorf("PromptOverheadMax %d, want the largest prompt_tokens − recorded in, %d", res.PromptOverheadMax, overhead)
	}
	if total == 0 || prog.StreamedTokens() != total {
		t.Errorf("%d streamed tokens counted; the records' completion tokens total %d (the server sent %d; accounting %+v)", prog.StreamedTokens(), total, emitted, res.Accounting)
	}
}
