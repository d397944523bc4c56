package servermetrics

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestSendsInferenceHeaders(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		inference, metrics string
		want               bool
	}{
		{"http://10.0.0.5:8000", "http://10.0.0.5:8000/metrics", true},
		{"http://gpu-node:8000/v1", "http://GPU-NODE:9090/metrics", true}, // port and case do not matter
		{"https://gpu-node", "https://gpu-node:9090/metrics", true},
		{"http://gpu-node", "https://gpu-node/metrics", true},
		{"https://gpu-node", "http://gpu-node/metrics", false}, // no downgrade to plain http
		{"http://gpu-node", "http://other-node/metrics", false},
		{"http://127.0.0.1:8000", "http://localhost:8000/metrics", false}, // names, not addresses
		{"", "http://gpu-node/metrics", false},
		{"sim://", "http://127.0.0.1/metrics", false},
	} {
		if got := SendsInferenceHeaders(c.inference, c.metrics); got != c.want {
			t.Errorf("SendsInferenceHeaders(%q, %q) = %v, want %v", c.inference, c.metrics, got, c.want)
		}
	}
}

// TestScrapeSendsHeaders: a scrape of the inference host gets the
// inference headers and Config.Headers (which win on equal names), another
// host only Config.Headers, and a URL's own user:password is sent as Basic
// auth while the URL is kept without it.
func TestScrapeSendsHeaders(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]http.Header{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Host] = r.Header.Clone()
		mu.Unlock()
		w.Write([]byte("up 1\n"))
	})
	a, b := httptest.NewServer(h), httptest.NewServer(h)
	defer a.Close()
	defer b.Close()
	hostA := strings.TrimPrefix(a.URL, "http://")
	_, portB, _ := strings.Cut(strings.TrimPrefix(b.URL, "http://"), ":")
	hostB := "localhost:" + portB
	s := New(Config{
		URLs:             []string{a.URL + "/metrics", "http://bob:pw@" + hostB + "/metrics"},
		InferenceURL:     a.URL,
		InferenceHeaders: http.Header{"Authorization": {"Bearer sk-1"}, "X-Team": {"blue"}},
		Headers:          http.Header{"X-Team": {"metrics-team"}, "X-Metrics-Token": {"mt"}},
	})
	s.Scrape(t.Context())
	ha, hb := got[hostA], got[hostB]
	if ha == nil || hb == nil {
		t.Fatalf("scrapes seen: %v", got)
	}
	if ha.Get("Authorization") != "Bearer sk-1" || ha.Get("X-Team") != "metrics-team" || ha.Get("X-Metrics-Token") != "mt" {
		t.Errorf("inference host got %v", ha)
	}
	wantBasic := "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:pw"))
	if hb.Get("Authorization") != wantBasic || hb.Get("X-Team") != "metrics-team" || hb.Get("X-Metrics-Token") != "mt" {
		t.Errorf("other host got %v", hb)
	}
	for _, u := range s.URLs() {
		if strings.Contains(u, "pw") {
			t.Errorf("URLs() keeps the password: %v", s.URLs())
		}
	}
	if ex := s.Snapshot(); len(ex.Summary.EndpointsSuccessful) != 2 || strings.Contains(strings.Join(ex.Summary.EndpointsConfigured, " "), "pw") {
		t.Errorf("summary %+v", ex.Summary)
	}
}
