package replay

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentperf/agentperf/sim"
)

// TestURLCredentialsAreSentAsBasicAuth: user:password in the server URL
// becomes "Authorization: Basic …" on every request (it used to be dropped
// silently when an API key was set, and was left to the HTTP library
// otherwise), the caller's Config is not changed, and combining it with
// another Authorization source is refused with a reason that does not
// print the password.
func TestURLCredentialsAreSentAsBasicAuth(t *testing.T) {
	cfgSim := sim.DefaultConfig()
	cfgSim.Model, cfgSim.ZeroLatency = "m", true
	s, err := sim.New(cfgSim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var mu sync.Mutex
	seen := map[string]int{}
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("Authorization")]++
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
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
