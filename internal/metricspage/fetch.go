// Package metricspage fetches one Prometheus text-format page (a server's
// /metrics, a GPU exporter's page) for the scrapers that parse it: one GET
// with the exposition format's Accept header, a bounded body, and an
// error that says what the server answered.
package metricspage

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Fetch GETs url with client within timeout, with the headers in hdr
// (nil for none), and returns the body of a 200 answer. Any other status
// is an error quoting the first 200 bytes of the body; a body longer than
// maxBody bytes is an error too (the page is not cut and parsed).
func Fetch(ctx context.Context, client *http.Client, url string, hdr http.Header, timeout time.Duration, maxBody int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request for %s: %w", url, err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxBody)+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		if len(body) > 200 {
			body = body[:200]
		}
		return nil, fmt.Errorf("HTTP %d: %q", resp.StatusCode, body)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("page larger than %d MiB", maxBody>>20)
	}
	return body, nil
}
