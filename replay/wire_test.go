package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/server/sim"
)

// wireResponse is one recorded response: a non-streaming body, or the SSE
// body of a stream.
type wireResponse struct {
	name   string
	stream bool
	body   []byte
}

// wireResponses reads testdata/wire (see its README.md).
func wireResponses(t testing.TB) []wireResponse {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "wire", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded responses in testdata/wire: %v", err)
	}
	var out []wireResponse
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		out = append(out, wireResponse{name: name, stream: strings.Contains(name, "-stream"), body: b})
	}
	return out
}

// sseLines returns the lines of an SSE body as the line reader splits them.
func sseLines(t testing.TB, body []byte) [][]byte {
	var lr lineReader
	lr.reset(bytes.NewReader(body))
	var out [][]byte
	for {
		l, err := lr.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]byte(nil), l...))
	}
}

// wireFallbacks parses r as the client does, with and without the live
// text, and checks every decision against encoding/json's (decodeSSEData,
// decodeFullResponse). It returns how many events or bodies went to
// encoding/json, and the live text.
func wireFallbacks(t *testing.T, r wireResponse) (fallbacks int, text string) {
	t.Helper()
	if !r.stream {
		want, werr := decodeFullResponse(r.body, nil)
		var live, wantLive []byte
		decodeFullResponse(r.body, &wantLive)
		for _, tp := range []*[]byte{nil, &live} {
			got, err := parseFullResponse(r.body, tp)
			if got.fallback {
				fallbacks++
			}
			got.fallback = false
			if got != want || (err == nil) != (werr == nil) {
				t.Errorf("%s: parseFullResponse = %+v, %v; encoding/json %+v, %v", r.name, got, err, want, werr)
			}
		}
		if !bytes.Equal(live, wantLive) {
			t.Errorf("%s: live text %q, encoding/json %q", r.name, live, wantLive)
		}
		return fallbacks, string(live)
	}
	var live, wantLive []byte
	sawData := false
	for _, line := range sseLines(t, r.body) {
		data, isData := bytes.CutPrefix(line, dataPrefix)
		data = bytes.TrimSpace(data)
		for _, tp := range []*[]byte{nil, &live} {
			ev, ok, err := parseSSELine(line, tp)
			if ev.Fallback {
				fallbacks++
			}
			ev.Fallback = false
			if !isData || len(data) == 0 || string(data) == "[DONE]" {
				if ok != (isData && len(data) > 0) || err != nil || ev.Fallback {
					t.Errorf("%s: line %q: ok %v, %v", r.name, line, ok, err)
				}
				continue
			}
			sawData = true
			var wtp *[]byte
			if tp != nil {
				wtp = &wantLive
			}
			want, werr := decodeSSEData(data, wtp)
			if !ok || (err == nil) != (werr == nil) || ev.Content != want.Content || ev.Reasoning != want.Reasoning ||
				ev.HasUsage != want.HasUsage || ev.Usage != want.Usage || (ev.ErrorMessage == nil) != (want.ErrorMessage == nil) {
				t.Errorf("%s: line %q: %+v, %v; encoding/json %+v, %v", r.name, line, ev, err, want, werr)
			}
		}
	}
	if !sawData {
		t.Errorf("%s: no data events", r.name)
	}
	if !bytes.Equal(live, wantLive) {
		t.Errorf("%s: live text %q, encoding/json %q", r.name, live, wantLive)
	}
	return fallbacks, string(live)
}

// TestWireFormats: on every recorded response of vLLM, SGLang, Dynamo,
// llm-d-inference-sim and the simulator, the one-pass scanner decides
// alone (no encoding/json), with and without the live text, and decides
// as encoding/json does.
func TestWireFormats(t *testing.T) {
	t.Parallel()
	servers := map[string]bool{}
	for _, r := range wireResponses(t) {
		servers[strings.SplitN(r.name, "-chat", 2)[0]] = true
		t.Run(r.name, func(t *testing.T) {
			if n, _ := wireFallbacks(t, r); n != 0 {
				t.Errorf("%d events or bodies of %s went to encoding/json, want 0", n, r.name)
			}
		})
	}
	for _, s := range []string{"vllm", "sglang", "dynamo", "llmd-sim", "sim", "llamacpp"} {
		if !servers[s] {
			t.Errorf("testdata/wire has no %s chat response", s)
		}
	}
}

// TestWireFormatsThroughClient sends every recorded response through the
// lane's client path (conn.do): no response is counted as a fallback.
func TestWireFormatsThroughClient(t *testing.T) {
	for _, r := range wireResponses(t) {
		t.Run(r.name, func(t *testing.T) {
			ct := "application/json"
			if r.stream {
				ct = "text/event-stream; charset=utf-8"
			}
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", ct)
				w.Write(r.body)
			}))
			defer hs.Close()
			c := (&Config{URL: hs.URL, Endpoint: "/v1/chat/completions", Streaming: r.stream, ConnectTimeout: 5 * time.Second}).normalize()
			k, err := newConn(c, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer k.close()
			var clock int64
			var text []byte
			x := k.do(c, []byte(`{}`), nil, func(*reqHeader) {}, func() int64 { clock++; return clock }, &text)
			if x.err != nil || x.fallback {
				t.Fatalf("exchange: err %v, fallback %v", x.err, x.fallback)
			}
			if !x.hasUsage {
				t.Errorf("no usage")
			}
		})
	}
}

// TestSimWireFormat counts the fallbacks on what the simulator sends
// today: chat and completions, streaming and not, with reasoning, as the
// client requests them.
func TestSimWireFormat(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.ZeroLatency = true
	cfg.ReasoningRatio = 0.3
	cfg.Model = "m"
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, ep := range []string{"chat/completions", "completions"} {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprintf("%s stream=%v", ep, stream)
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"fix the build"}],"prompt":"fix the build","max_tokens":12,"ignore_eos":true,"stream":%v,"stream_options":{"include_usage":true}}`, stream)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/"+ep, strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %v %s", name, resp.StatusCode, err, b)
			}
			n, text := wireFallbacks(t, wireResponse{name: name, stream: stream, body: b})
			if n != 0 {
				t.Errorf("%s: %d events or bodies went to encoding/json, want 0", name, n)
			}
			if text == "" {
				t.Errorf("%s: no live text", name)
			}
		}
	}
}

// referenceText is the live text encoding/json gives for b: per choice,
// the delta's (or the message's) content, then the text.
func referenceText(b []byte, delta bool) ([]byte, bool) {
	var c chunkJSON
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, false
	}
	var out []byte
	for _, ch := range c.Choices {
		if delta {
			out = append(out, ch.Delta.Content...)
		} else {
			out = append(out, ch.Message.Content...)
		}
		out = append(out, ch.Text...)
	}
	return out, true
}

// FuzzScanWire holds the scanner, live text included, to encoding/json,
// starting from every recorded server response (each body, and each event
// of each stream) in testdata/wire.
func FuzzScanWire(f *testing.F) {
	for _, r := range wireResponses(f) {
		if !r.stream {
			f.Add(r.body)
			continue
		}
		for _, l := range sseLines(f, r.body) {
			if d, ok := bytes.CutPrefix(l, dataPrefix); ok && len(bytes.TrimSpace(d)) > 0 {
				f.Add(bytes.TrimSpace(d))
			}
		}
	}
	for _, s := range []string{
		`{"choices":[{"delta":{"content":"\ud83d\ude42 \ud83d x \ude42\u00e9\t"}}]}`,
		`{"choices":[{"text":"b","message":{"content":"a"}},{"delta":{"content":"c"}}]}`,
		"{\"choices\":[{\"delta\":{\"content\":\"\xed\xa0\x80 \xc3\"}}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, delta := range []bool{true, false} {
			text := []byte("prefix")
			got, ok := scanCompletionText(b, &liveText{dst: &text, delta: delta})
			if !ok {
				continue
			}
			want, wok := scanReference(b)
			if !wok {
				t.Fatalf("scanCompletionText(%q) accepted input encoding/json rejects", b)
			}
			if got != want {
				t.Fatalf("scanCompletionText(%q) = %+v, encoding/json %+v", b, got, want)
			}
			wt, _ := referenceText(b, delta)
			if string(text) != "prefix"+string(wt) {
				t.Fatalf("scanCompletionText(%q, delta %v): text %q, encoding/json %q", b, delta, text[6:], wt)
			}
		}
	})
}
