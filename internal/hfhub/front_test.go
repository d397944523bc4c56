package hfhub

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// newProxyFront starts a server that answers mux's patterns and passes
// every other request on to backend, and returns its URL.
func newProxyFront(t *testing.T, backend string, mux *http.ServeMux) string {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	mux.Handle("/", rp)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}
