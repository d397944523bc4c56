package replay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/metrics"
)

func TestServerErrorType(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ body, want string }{
		{`{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}`, "BadRequestError"}, // vLLM, SGLang
		{`{"error":{"message":"slow down","type":"RateLimitError","param":null,"code":429}}`, "RateLimitError"},    // OpenAI, newer vLLM
		{`{"error":"Input validation error","error_type":"validation"}`, "validation"},                             // TGI
		{`{"error":{"message":"x","error_type":"overloaded"}}`, "overloaded"},
		{`{"object":"error","type":"error"}`, ""}, // "error" names nothing
		{`{"error":"upstream overloaded"}`, ""},
		{`upstream connect error`, ""},
		{`{"type":{"nested":true}}`, ""},
		{``, ""},
	} {
		if got := serverErrorType([]byte(c.body)); got != c.want {
			t.Errorf("serverErrorType(%s) = %q, want %q", c.body, got, c.want)
		}
	}
}

// TestMalformedBodyHasNoCode: a 200 whose JSON body does not parse is a
// failure without a code, like a malformed SSE event (the status was a
// success; only errors the server reports carry a code).
func TestMalformedBodyHasNoCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"content":"trunc`))
	}))
	t.Cleanup(srv.Close)
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 2), sink, ovf)
	cfg.Streaming, cfg.UseServerTokenCount, cfg.Concurrency = false, false, 1
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	recs := sink.records()
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	for _, r := range recs {
		if r.Error == nil || r.Error.Category != metrics.CategoryMalformed || r.Error.Code != 0 {
			t.Fatalf("record error %+v, want a malformed_response without a code", r.Error)
		}
	}
}

// FuzzServerErrorType: any error body gives a short type or none, and a
// type is only ever taken from a JSON string.
func FuzzServerErrorType(f *testing.F) {
	for _, s := range []string{
		`{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}`,
		`{"error":{"message":"slow down","type":"RateLimitError","code":429}}`,
		`{"error":"x","error_type":"validation"}`,
		`{"error":{"type":1}}`, `[]`, `{"type":"error"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := serverErrorType(body)
		if len(got) > maxServerType {
			t.Fatalf("type of %d bytes", len(got))
		}
		if got != "" && !strings.Contains(string(body), `"`) {
			t.Fatalf("type %q from a body without strings", got)
		}
	})
}

// TestErrorObjectIn200HasItsCodeAndType (issue 34, case 14): a 200 whose
// body is the server's error object used to be recorded as a
// MalformedResponse without the code or the server's error type it
// states. It is recorded as the server's error (ErrorResponse), with both.
func TestErrorObjectIn200HasItsCodeAndType(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"error":{"message":"the engine is overloaded","type":"ServiceUnavailableError","param":null,"code":503}}`))
	}))
	t.Cleanup(srv.Close)
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 2), sink, ovf)
	cfg.Streaming, cfg.UseServerTokenCount, cfg.Concurrency = false, false, 1
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	recs := sink.records()
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	for _, r := range recs {
		e := r.Error
		if e == nil || e.Code != 503 || e.ServerType != "ServiceUnavailableError" || e.Type != "ErrorResponse" || !strings.Contains(e.Message, "overloaded") {
			t.Fatalf("record error %+v, want code 503, error_type ServiceUnavailableError, the message", e)
		}
	}
}
