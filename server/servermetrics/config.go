package servermetrics

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultInterval is the scrape interval when Config.Interval is zero; it
// matches aiperf's AIPERF_SERVER_METRICS_COLLECTION_INTERVAL default (0.333 s).
const DefaultInterval = 333 * time.Millisecond

// DefaultSliceDuration is the grid the derived figures use when
// Config.SliceDuration is zero (no timeslices are written in that case).
const DefaultSliceDuration = time.Second

// Environment variables read by URLsFrom and IntervalFrom.
const (
	EnvURLs     = "AIPERF_SERVER_METRICS_URLS"
	EnvInterval = "AIPERF_SERVER_METRICS_COLLECTION_INTERVAL"
)

// SchemaVersion is the server_metrics_export.json schema_version written.
const SchemaVersion = "1.0"

// Config configures a Scraper. The zero value of every field except URLs
// means a documented default.
type Config struct {
	// URLs are the full scrape URLs (http://host:port/metrics): the inference
	// URL's /metrics plus every --server-metrics URL and
	// AIPERF_SERVER_METRICS_URLS entry; see URLsFrom.
	URLs []string
	// Interval between scrapes of one endpoint; 0 means DefaultInterval.
	Interval time.Duration
	// SliceDuration is the width of the per-series timeslices written to
	// the export (--slice-duration); 0 means no timeslices are written (the
	// derived figures then use DefaultSliceDuration internally).
	SliceDuration time.Duration
	// Timeout bounds one fetch; 0 means max(2×Interval, 2 s).
	Timeout time.Duration
	// Client performs the fetches; nil means a client with no global state
	// (its own transport).
	Client *http.Client
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Headers are sent with every scrape (--server-metrics-header), e.g.
	// an Authorization header for a metrics endpoint behind auth.
	Headers http.Header
	// InferenceURL is the inference server's URL (--url) and
	// InferenceHeaders the headers its requests carry, credentials
	// included. Scrapes of URLs on its host also send InferenceHeaders
	// (see SendsInferenceHeaders); Headers win on equal names. A URL in
	// URLs with user:password of its own sends them as Basic auth; the
	// scraper shows and exports every URL without them.
	InferenceURL     string
	InferenceHeaders http.Header
	// Logf receives warnings (failed scrapes, unparsable pages); nil
	// discards them. Failures are also counted in Derived.ScrapeFailures.
	Logf func(format string, args ...any)

	// AIPerfVersion, BenchmarkID and InputConfig are copied to the export's
	// top level (aiperf_version, benchmark_id, input_config). A nil
	// InputConfig writes {"server_metrics":{"urls":URLs}}.
	AIPerfVersion string
	BenchmarkID   string
	InputConfig   any
}

func (c Config) interval() time.Duration {
	if c.Interval <= 0 {
		return DefaultInterval
	}
	return c.Interval
}

func (c Config) grid() time.Duration {
	if c.SliceDuration <= 0 {
		return DefaultSliceDuration
	}
	return c.SliceDuration
}

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return max(2*c.interval(), 2*time.Second)
}

// URLsFrom returns the scrape URLs of a run: <scheme>://<host>/metrics of
// the inference URL (its path is dropped, as aiperf does), then every entry
// of extra (each may be a comma- or space-separated list) and of the
// AIPERF_SERVER_METRICS_URLS environment variable read through getenv.
// Entries without a scheme get "http://"; entries without a path get
// "/metrics". Duplicates are removed, the first occurrence's order kept.
// An inference URL that is not http(s) (e.g. sim://) contributes nothing.
// getenv may be nil.
func URLsFrom(inferenceURL string, extra []string, getenv func(string) string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(u string) {
		if u != "" && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	if u, err := url.Parse(strings.TrimSpace(inferenceURL)); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		add(u.Scheme + "://" + u.Host + "/metrics")
	}
	var lists []string
	lists = append(lists, extra...)
	if getenv != nil {
		lists = append(lists, getenv(EnvURLs))
	}
	for _, l := range lists {
		for _, f := range strings.FieldsFunc(l, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
			add(normalizeURL(f))
		}
	}
	return out
}

func normalizeURL(s string) string {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/metrics"
	}
	return u.String()
}

// IntervalFrom reads AIPERF_SERVER_METRICS_COLLECTION_INTERVAL (seconds, a
// decimal number) through getenv. Unset means DefaultInterval; a value that
// is not a positive number is an error naming the variable.
func IntervalFrom(getenv func(string) string) (time.Duration, error) {
	if getenv == nil {
		return DefaultInterval, nil
	}
	v := strings.TrimSpace(getenv(EnvInterval))
	if v == "" {
		return DefaultInterval, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0) || f > 3600 {
		return 0, fmt.Errorf("%s=%q: want a positive number of seconds such as 0.333", EnvInterval, v)
	}
	return time.Duration(f * float64(time.Second)), nil
}
