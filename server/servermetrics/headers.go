package servermetrics

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
)

// Which headers a scrape sends.
//
// Every scrape sends Config.Headers (--server-metrics-header). A scrape of
// a URL on the inference server's host (SendsInferenceHeaders) also sends
// Config.InferenceHeaders: the -H headers and the credentials the requests
// carry (--api-key as a bearer token, user:password of --url as Basic
// auth), so that a /metrics behind the same proxy or auth answers. Names
// set in Config.Headers win. A scrape URL with user:password of its own
// sends them as Basic auth (overriding both), and the URL is kept without
// them everywhere it is shown or written.

// SendsInferenceHeaders reports whether a scrape of metricsURL gets the
// inference server's headers and credentials: the host names are equal
// (ignoring case and port, like net/http when it forwards credentials on
// a redirect) and the scrape does not downgrade an https inference URL to
// plain http.
func SendsInferenceHeaders(inferenceURL, metricsURL string) bool {
	iu, err1 := url.Parse(inferenceURL)
	mu, err2 := url.Parse(metricsURL)
	if err1 != nil || err2 != nil || iu.Hostname() == "" {
		return false
	}
	if !strings.EqualFold(iu.Hostname(), mu.Hostname()) {
		return false
	}
	return !(iu.Scheme == "https" && mu.Scheme != "https")
}

// prepareEndpoints strips user:password from the configured URLs (they are
// shown and exported without them) and builds each endpoint's headers.
func (s *Scraper) prepareEndpoints() {
	clean := make([]string, len(s.cfg.URLs))
	s.headers = make([]http.Header, len(s.cfg.URLs))
	for i, raw := range s.cfg.URLs {
		h := http.Header{}
		clean[i] = raw
		if SendsInferenceHeaders(s.cfg.InferenceURL, raw) {
			for k, vs := range s.cfg.InferenceHeaders {
				h[http.CanonicalHeaderKey(k)] = vs
			}
		}
		for k, vs := range s.cfg.Headers {
			h[http.CanonicalHeaderKey(k)] = vs
		}
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			pass, _ := u.User.Password()
			h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass)))
			u.User = nil
			clean[i] = u.String()
		}
		s.headers[i] = h
	}
	s.cfg.URLs = clean
}
