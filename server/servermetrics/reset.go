package servermetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrNoResetEndpoint is returned by ResetPrefixCache when the server
// answers neither vLLM's nor SGLang's reset endpoint.
var ErrNoResetEndpoint = errors.New("the server has no prefix-cache reset endpoint")

// Reset endpoints, tried in this order: vLLM's (started with
// --enable-prefix-caching; some builds need VLLM_SERVER_DEV_MODE=1 to
// expose it), then SGLang's.
const (
	ResetPathVLLM   = "/reset_prefix_cache"
	ResetPathSGLang = "/flush_cache"
)

// Defaults of ResetOptions.
const (
	DefaultDrainTimeout = 5 * time.Minute
	DefaultDrainPoll    = 250 * time.Millisecond
)

// ResetOptions configure ResetPrefixCache, WaitIdle and ResetAndDrain.
// The zero value of every field means its documented default.
type ResetOptions struct {
	// Client performs the requests; nil means a client of its own.
	Client *http.Client
	// Headers are sent with every request (an Authorization header for a
	// server behind auth).
	Headers http.Header
	// MetricsURLs are the /metrics pages whose running and waiting gauges
	// must reach zero; empty means the base URL's /metrics.
	MetricsURLs []string
	// DrainTimeout bounds WaitIdle; 0 means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Poll is the interval between two reads of /metrics; 0 means
	// DefaultDrainPoll.
	Poll time.Duration
}

func (o *ResetOptions) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
}

// baseOf returns scheme://host of an inference URL.
func baseOf(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("server URL %q: want http(s)://host[:port]", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

// ResetPrefixCache empties the server's prefix cache: it POSTs vLLM's
// /reset_prefix_cache and, when the server does not know that path (404
// or 405), SGLang's /flush_cache. It returns the path that answered 2xx.
// When neither exists the error wraps ErrNoResetEndpoint; any other
// refusal (SGLang's 400 while requests run, a 401, a 500) is an error
// with the status and the start of the body.
//
// vLLM answers 200 even when it skipped the reset because blocks were in
// use, so reset an idle server: ResetAndDrain waits for that first.
func ResetPrefixCache(ctx context.Context, serverURL string, opt ResetOptions) (string, error) {
	base, err := baseOf(serverURL)
	if err != nil {
		return "", err
	}
	cl := opt.client()
	var tried []string
	for _, path := range []string{ResetPathVLLM, ResetPathSGLang} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, nil)
		if err != nil {
			return "", err
		}
		for k, vs := range opt.Headers {
			req.Header[k] = vs
		}
		resp, err := cl.Do(req)
		if err != nil {
			return "", fmt.Errorf("reset the prefix cache: POST %s%s: %w", base, path, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return path, nil
		case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
			tried = append(tried, fmt.Sprintf("%s: %d", path, resp.StatusCode))
			continue
		default:
			return "", fmt.Errorf("reset the prefix cache: POST %s%s: status %d: %s", base, path, resp.StatusCode, strings.TrimSpace(string(body)))
		}
	}
	return "", fmt.Errorf("%w at %s (%s): start vLLM with prefix caching (and VLLM_SERVER_DEV_MODE=1 where its build hides the endpoint) or use SGLang, or run without the reset",
		ErrNoResetEndpoint, base, strings.Join(tried, ", "))
}

// Load is what a server's /metrics say is in flight.
type Load struct {
	Running, Waiting float64
}

// ReadLoad reads the running and waiting request gauges of one /metrics
// page, summed over its series (engines): vllm:num_requests_running and
// vllm:num_requests_waiting, or SGLang's sglang:num_running_reqs and
// sglang:num_queue_reqs. It is an error when the page has neither.
func ReadLoad(ctx context.Context, metricsURL string, opt ResetOptions) (Load, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return Load{}, err
	}
	for k, vs := range opt.Headers {
		req.Header[k] = vs
	}
	resp, err := opt.client().Do(req)
	if err != nil {
		return Load{}, fmt.Errorf("read %s: %w", metricsURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return Load{}, fmt.Errorf("read %s: %w", metricsURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Load{}, fmt.Errorf("read %s: status %d", metricsURL, resp.StatusCode)
	}
	fams, err := newParser().parse(body)
	if err != nil {
		return Load{}, fmt.Errorf("read %s: %w", metricsURL, err)
	}
	var l Load
	found := false
	sum := func(names []string, dst *float64) {
		for _, f := range fams {
			for _, n := range names {
				if f.name == n {
					found = true
					for _, s := range f.series {
						*dst += s.value
					}
				}
			}
		}
	}
	sum(namesRunning, &l.Running)
	sum(namesWaiting, &l.Waiting)
	if !found {
		return Load{}, fmt.Errorf("%s shows none of %s: cannot tell when the server is idle", metricsURL, strings.Join(append(append([]string(nil), namesRunning...), namesWaiting...), ", "))
	}
	return l, nil
}

// WaitIdle polls the /metrics pages until every one shows no running and
// no waiting request, or until opt.DrainTimeout, which is an error giving
// the last figures. A page without the gauges is an error at once.
func WaitIdle(ctx context.Context, serverURL string, opt ResetOptions) error {
	urls := opt.MetricsURLs
	if len(urls) == 0 {
		base, err := baseOf(serverURL)
		if err != nil {
			return err
		}
		urls = []string{base + "/metrics"}
	}
	timeout := opt.DrainTimeout
	if timeout <= 0 {
		timeout = DefaultDrainTimeout
	}
	poll := opt.Poll
	if poll <= 0 {
		poll = DefaultDrainPoll
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		busy := ""
		for _, u := range urls {
			l, err := ReadLoad(ctx, u, opt)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				return err
			}
			if l.Running > 0 || l.Waiting > 0 {
				busy = fmt.Sprintf("%s shows %g running and %g waiting", u, l.Running, l.Waiting)
				break
			}
		}
		if busy == "" && ctx.Err() == nil {
			return nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			if busy == "" {
				busy = "the last read did not finish"
			}
			return fmt.Errorf("the server did not drain within %s (%s): raise the drain timeout or check for stuck requests", timeout, busy)
		case <-t.C:
		}
	}
}

// ResetAndDrain readies a server for the next measurement with a cold
// prefix cache: it waits until nothing runs or waits (WaitIdle), resets
// the prefix cache (ResetPrefixCache, which vLLM skips while blocks are in
// use, hence the wait first) and returns the reset path that answered.
func ResetAndDrain(ctx context.Context, serverURL string, opt ResetOptions) (string, error) {
	if err := WaitIdle(ctx, serverURL, opt); err != nil {
		return "", err
	}
	return ResetPrefixCache(ctx, serverURL, opt)
}
