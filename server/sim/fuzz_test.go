package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzCompletionRequest feeds arbitrary bodies to both completion
// endpoints: the server must answer 200, 400 or 404 with a well-formed
// body, never panic.
func FuzzCompletionRequest(f *testing.F) {
	seeds := []string{
		`{"model":"agentperf-sim","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"max_completion_tokens":2}`,
		`{"messages":[{"role":"assistant","content":null},{"role":"user","content":"x"}],"ignore_eos":true,"max_tokens":1}`,
		`{"prompt":"hello","max_tokens":2}`,
		`{"prompt":[1,2,3],"max_tokens":2,"stream":true}`,
		`{"prompt":["a","b"]}`,
		`{"messages":[{"role":"user","content":"x"}],"max_tokens":-1}`,
		`{"messages":[{"role":"user","content":"x"}],"max_tokens":1000000}`,
		`{"model":"nope","messages":[]}`,
		`not json`, `{}`, `[]`, `null`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	s, err := New(Config{ZeroLatency: true, MaxModelLen: 4096, KVCapacityTokens: 16384})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		path := "/v1/completions"
		if chat {
			path = "/v1/chat/completions"
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", path, bytes.NewReader(body)))
		switch w.Code {
		case 200:
			if ct := w.Header().Get("Content-Type"); ct == "application/json" && !json.Valid(w.Body.Bytes()) {
				t.Fatalf("200 with invalid JSON: %s", w.Body.Bytes())
			}
		case http.StatusBadRequest, http.StatusNotFound:
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("%d with invalid JSON: %s", w.Code, w.Body.Bytes())
			}
		default:
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}

// FuzzDecodeJSONString: the fast string decoder agrees with encoding/json
// on every valid JSON string literal.
func FuzzDecodeJSONString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\t\"q\"\\ \/"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00 emoji"`, `"\ud83d lone"`, `"\udc00\ud800"`, "\"\xff bad utf8\"", `"é ✓"`, `""`, `"\b\f\r"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			return // not a JSON string literal: the outer decoder rejects it first
		}
		if !json.Valid([]byte(lit)) || len(lit) == 0 || lit[0] != '"' {
			return
		}
		got, err := decodeJSONString([]byte(lit))
		if err != nil || got != want {
			t.Fatalf("decodeJSONString(%q) = %q, %v; encoding/json gives %q", lit, got, err, want)
		}
	})
}
