package metricspage

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Accept"), "text/plain;version=0.0.4") || r.Header.Get("X-Token") != "t" {
			http.Error(w, "bad headers", http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/metrics":
			w.Write([]byte("up 1\n"))
		case "/big":
			w.Write([]byte(strings.Repeat("x", 2<<20)))
		default:
			http.Error(w, strings.Repeat("not here ", 40), http.StatusNotFound)
		}
	}))
	defer srv.Close()
	hdr := http.Header{"X-Token": {"t"}}
	get := func(path string) ([]byte, error) {
		return Fetch(context.Background(), srv.Client(), srv.URL+path, hdr, 5*time.Second, 1<<20)
	}
	if b, err := get("/metrics"); err != nil || string(b) != "up 1\n" {
		t.Fatalf("a page: %q, %v", b, err)
	}
	if _, err := get("/missing"); err == nil || !strings.HasPrefix(err.Error(), "HTTP 404: \"not here") || len(err.Error()) > 230 {
		t.Fatalf("a 404 must quote at most 200 bytes of its body: %v", err)
	}
	if _, err := get("/big"); err == nil || err.Error() != "page larger than 1 MiB" {
		t.Fatalf("a page over the bound: %v", err)
	}
	if _, err := Fetch(context.Background(), srv.Client(), srv.URL+"/metrics", nil, 5*time.Second, 1<<20); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("the headers given must be sent: %v", err)
	}
}
