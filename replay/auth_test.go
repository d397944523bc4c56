package replay

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestURLCredentialsAreSentAsBasicAuth: user:password in the server URL
// becomes "Authorization: Basic …" on every request (it used to be dropped
// silently when an API key was set, and was left to the HTTP library
// otherwise), the caller's Config is not changed, and combining it with
// another Authorization source is refused with a reason that does not
// print the password.
func TestURLCredentialsAreSentAsBasicAuth(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := simBehind(t, func(r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("Authorization")]++
		mu.Unlock()
	})
	const pass = "s3cret-PASSWORD"
	url := strings.Replace(srv.URL, "http://", "http://alice:"+pass+"@", 1)

	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, url, testCorpus(t, 3), sink, ovf)
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+pass))
	if len(seen) != 1 || seen[want] != res.Accounting.Sent || res.Accounting.Sent == 0 {
		t.Fatalf("Authorization headers seen %v, want %q on all %d requests", seen, want, res.Accounting.Sent)
	}
	if cfg.URL != url || cfg.Headers != nil {
		t.Fatalf("Run changed the caller's config: URL %q headers %v", cfg.URL, cfg.Headers)
	}

	for name, mod := range map[string]func(c *Config){
		"with an API key":              func(c *Config) { c.APIKey = "sk-x" },
		"with an Authorization header": func(c *Config) { c.Headers = map[string]string{"authorization": "Bearer x"} },
	} {
		t.Run(name, func(t *testing.T) {
			c := cfg
			mod(&c)
			err := c.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "Config.URL" || strings.Contains(err.Error(), pass) {
				t.Fatalf("Validate() = %v, want a refusal of Config.URL without the password", err)
			}
		})
	}
	if clean, auth, err := URLCredentials("http://localhost:8000/v1"); err != nil || clean != "http://localhost:8000/v1" || auth != "" {
		t.Fatalf("URLCredentials without user info = %q %q %v", clean, auth, err)
	}
}

// TestRequestOnTheWire: what a request carries, as a server reads it: the
// endpoint under the URL's path, Host, the JSON content type, Accept for a
// stream, the bearer token, every --header (one named like a built-in
// header replaces it), a fresh X-Request-ID per request, the conversation's
// X-Correlation-ID, and a Content-Length that is the body's.
func TestRequestOnTheWire(t *testing.T) {
	type seenReq struct {
		method, path, host string
		h                  http.Header
		bodyLen            int
		contentLength      int64
	}
	var mu sync.Mutex
	var seen []seenReq
	srv := simBehind(t, func(r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, seenReq{r.Method, r.URL.RequestURI(), r.Host, r.Header.Clone(), len(b), r.ContentLength})
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.URL.Path = strings.TrimPrefix(r.URL.Path, "/gw")
	})
	cfg := testConfig(t, srv.URL+"/gw", testCorpus(t, 2), &memSink{}, &memSink{})
	cfg.Streaming = true
	cfg.APIKey = "sk-test"
	cfg.Headers = map[string]string{"x-tenant": "blue", "content-type": "application/json; charset=utf-8"}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || len(seen) != res.Accounting.Sent {
		t.Fatalf("the server saw %d requests, the run sent %d", len(seen), res.Accounting.Sent)
	}
	ids := map[string]bool{}
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, r := range seen {
		switch {
		case r.method != "POST" || r.path != "/gw/v1/chat/completions" || r.host != host:
			t.Fatalf("%s %s Host %s", r.method, r.path, r.host)
		case r.h.Get("Content-Type") != "application/json; charset=utf-8" || len(r.h.Values("Content-Type")) != 1:
			t.Fatalf("Content-Type %q", r.h.Values("Content-Type"))
		case r.h.Get("Accept") != "text/event-stream" || r.h.Get("Authorization") != "Bearer sk-test" || r.h.Get("X-Tenant") != "blue":
			t.Fatalf("headers %v", r.h)
		case r.contentLength != int64(r.bodyLen) || r.bodyLen == 0:
			t.Fatalf("Content-Length %d, body %d bytes", r.contentLength, r.bodyLen)
		case r.h.Get("X-Correlation-ID") == "" || ids[r.h.Get("X-Request-ID")]:
			t.Fatalf("X-Request-ID %q (repeated or empty), X-Correlation-ID %q", r.h.Get("X-Request-ID"), r.h.Get("X-Correlation-ID"))
		}
		ids[r.h.Get("X-Request-ID")] = true
	}

	for name, hs := range map[string]map[string]string{
		"line break in a value": {"X-A": "1\r\nX-Injected: 2"},
		"name not a token":      {"X A": "1"},
		"framing header":        {"transfer-encoding": "chunked"},
	} {
		t.Run(name, func(t *testing.T) {
			c := cfg
			c.Headers = hs
			var fe *FieldError
			if err := c.Validate(); !errors.As(err, &fe) || fe.Field != "Config.Headers" {
				t.Fatalf("Validate() = %v, want a refusal of Config.Headers", err)
			}
		})
	}
}

// simBehind starts a zero-latency simulator serving "m" behind an HTTP
// server that shows each request to see (which may change it) before the
// simulator answers it.
func simBehind(t *testing.T, see func(*http.Request)) *httptest.Server {
	t.Helper()
	h := newZeroSim(t).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		see(r)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}
