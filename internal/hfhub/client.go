package hfhub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentperf/agentperf/internal/numfmt"
)

// Client downloads from a Hugging Face hub into the hub cache. It is safe
// for concurrent use; downloads of the same blob, in this or other
// processes, are serialised by a lock file in <cache>/.locks.
type Client struct {
	cfg  Config
	hc   *http.Client
	host string // the endpoint's host:port: the only host that gets the token

	// wrapWriter, when set, wraps the writer of each download (tests
	// inject write failures with it).
	wrapWriter func(io.Writer) io.Writer
}

// New returns a client for cfg; zero fields take their documented
// defaults.
func New(cfg Config) *Client {
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	cfg.Endpoint = strings.TrimRight(cfg.Endpoint, "/")
	if cfg.MetadataTimeout <= 0 {
		cfg.MetadataTimeout = 10 * time.Second
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 10 * time.Second
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = 5
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	tr := cfg.Transport
	if tr == nil {
		proxy := cfg.Proxy
		tr = &http.Transport{
			Proxy: func(r *http.Request) (*url.URL, error) {
				if proxy == nil {
					return nil, nil
				}
				return proxy(r.URL)
			},
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: max(cfg.ReadTimeout, cfg.MetadataTimeout),
			DisableCompression:    true, // sizes and checksums are of the raw bytes
			MaxIdleConnsPerHost:   4,
			ForceAttemptHTTP2:     true,
		}
	}
	c := &Client{cfg: cfg, hc: &http.Client{
		Transport: tr,
		// Redirects are followed by hand, so that the token never
		// follows a redirect to another host.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	if u, err := url.Parse(cfg.Endpoint); err == nil {
		c.host = strings.ToLower(u.Host)
	}
	return c
}

// CacheDir returns the hub cache the client fills.
func (c *Client) CacheDir() string { return c.cfg.CacheDir }

// Offline reports whether the client may not use the network.
func (c *Client) Offline() bool { return c.cfg.Offline }

func (c *Client) logf(format string, args ...any) {
	if c.cfg.Logf != nil {
		c.cfg.Logf(format, args...)
	}
}

// target is what a request is about, for messages.
type target struct {
	kind, repo, rev, file string
}

// noun is "dataset" or "model".
func (t target) noun() string {
	if t.kind == KindDataset {
		return "dataset"
	}
	return "model"
}

func (t target) String() string {
	s := t.noun() + " " + t.repo
	if t.rev != "" {
		s += "@" + t.rev
	}
	if t.file != "" {
		s = "file " + t.file + " of " + s
	}
	return s
}

// urlPrefix is the kind's prefix in hub URLs ("datasets/"; models have none).
func urlPrefix(kind string) string {
	if kind == KindModel {
		return ""
	}
	return kind + "/"
}

// page is the repository's page on the hub.
func (c *Client) page(t target) string { return c.cfg.Endpoint + "/" + urlPrefix(t.kind) + t.repo }

// fetchCommand is the agentperf command that pre-downloads t.
func fetchCommand(t target) string {
	ref := t.repo
	if t.rev != "" && t.rev != "main" {
		ref += "@" + t.rev
	}
	if t.kind == KindDataset {
		return "agentperf dataset download " + ref
	}
	return "agentperf tokenizer download " + ref
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// newRequest builds a request; the token goes only to the endpoint's host.
func (c *Client) newRequest(ctx context.Context, method, u string) (*http.Request, bool, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%s %s: %w", method, stripQuery(u), err)
	}
	req.Header.Set("User-Agent", "agentperf-hub/1")
	req.Header.Set("Accept-Encoding", "identity")
	sent := false
	if !c.cfg.Token.Empty() && strings.EqualFold(req.URL.Host, c.host) {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token.Reveal())
		sent = true
	}
	return req, sent, nil
}

// retryable reports whether a status is worth another attempt.
func retryable(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

// backoff is the delay before retry number n (1-based), at least
// Retry-After when the server sent one (capped at a minute).
func (c *Client) backoff(n int, h http.Header) time.Duration {
	d := c.cfg.Backoff << min(n-1, 10)
	d = min(d, 8*time.Second)
	if h != nil {
		if s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && s > 0 {
			d = max(d, min(time.Duration(s)*time.Second, time.Minute))
		}
	}
	return d
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// small is a metadata answer read in full.
type small struct {
	status    int
	header    http.Header
	body      []byte
	url       string // the request URL
	tokenSent bool
}

// maxSmallBody bounds an API answer (a listing of a large repository is a
// few MB).
const maxSmallBody = 64 << 20

// fetchSmall sends a metadata request with retries on 5xx, 408, 429 and
// network errors, each attempt bounded by MetadataTimeout, and reads the
// body. 3xx and 4xx answers are returned as they are; the final answer
// after failed retries is an ErrUnreachable error.
func (c *Client) fetchSmall(ctx context.Context, method, u string, t target) (small, error) {
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			var h http.Header
			var he *retryErr
			if errors.As(last, &he) {
				h = he.header
			}
			d := c.backoff(attempt, h)
			c.logf("hub: %s %s: %v; retry %d of %d in %s", method, stripQuery(u), last, attempt, c.cfg.Retries, d)
			if err := sleep(ctx, d); err != nil {
				return small{}, err
			}
		}
		s, err := c.fetchOnce(ctx, method, u)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			return small{}, ctx.Err()
		}
		last = err
		var dns *net.DNSError
		if attempt >= c.cfg.Retries || (errors.As(err, &dns) && dns.IsNotFound) {
			// An unknown host name does not come back by waiting.
			return small{}, fmt.Errorf("%w: %s %s (for %s): %v", ErrUnreachable, method, stripQuery(u), t, last)
		}
	}
}

// retryErr is a retryable status answer.
type retryErr struct {
	status int
	header http.Header
}

func (e *retryErr) Error() string {
	return fmt.Sprintf("the hub answered %d %s", e.status, http.StatusText(e.status))
}

func (c *Client) fetchOnce(ctx context.Context, method, u string) (small, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.MetadataTimeout)
	defer cancel()
	req, sent, err := c.newRequest(actx, method, u)
	if err != nil {
		return small{}, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return small{}, cleanURLError(err)
	}
	defer resp.Body.Close()
	if retryable(resp.StatusCode) {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return small{}, &retryErr{status: resp.StatusCode, header: resp.Header}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSmallBody+1))
	if err != nil {
		return small{}, cleanURLError(err)
	}
	if len(body) > maxSmallBody {
		return small{}, fmt.Errorf("%s %s: answer larger than %s", method, stripQuery(u), numfmt.Bytes(maxSmallBody))
	}
	return small{status: resp.StatusCode, header: resp.Header, body: body, url: u, tokenSent: sent}, nil
}

// cleanURLError drops the query of the URL inside a *url.Error (a signed
// CDN URL carries credentials there).
func cleanURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: stripQuery(ue.URL), Err: ue.Err}
	}
	return err
}

// httpError turns a 4xx answer into an *HTTPError.
func (c *Client) httpError(method string, s small, t target) error {
	return &HTTPError{
		Status: s.status, Code: s.header.Get("X-Error-Code"), Message: s.header.Get("X-Error-Message"),
		Method: method, URL: stripQuery(s.url), What: t.String(), Page: c.page(t),
		TokenSent: s.tokenSent, TokenFrom: c.cfg.TokenFrom, TokenPath: c.cfg.TokenPath,
	}
}

// resolveLocation resolves a Location header against the request URL.
func resolveLocation(base, loc string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	l, err := url.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("malformed redirect Location: %w", err)
	}
	return b.ResolveReference(l).String(), nil
}

// List asks the hub which commit rev names in repo and which files it
// holds: GET {endpoint}/api/{kind}/{repo}/revision/{rev}.
func (c *Client) List(ctx context.Context, kind, repo, rev string) (RepoInfo, error) {
	if rev == "" {
		rev = "main"
	}
	t := target{kind: kind, repo: repo, rev: rev}
	if err := validate(kind, repo, rev); err != nil {
		return RepoInfo{}, err
	}
	if c.cfg.Offline {
		return RepoInfo{}, fmt.Errorf("%s: cannot ask the hub: %w (unset it to download)", t, ErrOffline)
	}
	u := c.cfg.Endpoint + "/api/" + kind + "/" + repo + "/revision/" + url.PathEscape(rev)
	for hops := 0; ; hops++ {
		s, err := c.fetchSmall(ctx, http.MethodGet, u, t)
		if err != nil {
			return RepoInfo{}, err
		}
		switch {
		case s.status >= 300 && s.status < 400 && hops < 5:
			if u, err = resolveLocation(u, s.header.Get("Location")); err != nil {
				return RepoInfo{}, fmt.Errorf("%s: %w", t, err)
			}
			continue
		case s.status != http.StatusOK:
			return RepoInfo{}, c.httpError(http.MethodGet, s, t)
		}
		info, err := ParseRepoInfo(s.body)
		if err != nil {
			return RepoInfo{}, fmt.Errorf("%s: GET %s: %w", t, stripQuery(u), err)
		}
		return info, nil
	}
}

func validate(kind, repo, rev string) error {
	if kind != KindDataset && kind != KindModel {
		return fmt.Errorf("hub repository kind %q: want %q or %q", kind, KindDataset, KindModel)
	}
	if err := ValidRepoID(repo); err != nil {
		return err
	}
	return ValidRevision(rev)
}

// fileMeta is what a HEAD on a file's resolve URL says about it.
type fileMeta struct {
	etag   string
	size   int64
	url    string // where to GET the bytes
	commit string
	xet    bool
}

// head asks for a file's metadata: HEAD {endpoint}/{prefix}{repo}/resolve/{commit}/{file},
// following only redirects within the endpoint's host (a renamed
// repository); a redirect elsewhere (LFS, Xet bridge, CDN) is where the
// bytes are. The linked ETag and size (X-Linked-Etag, X-Linked-Size) win
// over the answer's own, which describe the redirect.
func (c *Client) head(ctx context.Context, t target, commit string) (fileMeta, error) {
	u := c.cfg.Endpoint + "/" + urlPrefix(t.kind) + t.repo + "/resolve/" + url.PathEscape(commit) + "/" + escapePath(t.file)
	for hops := 0; ; hops++ {
		s, err := c.fetchSmall(ctx, http.MethodHead, u, t)
		if err != nil {
			return fileMeta{}, err
		}
		m := fileMeta{url: u, commit: s.header.Get("X-Repo-Commit"), xet: s.header.Get("X-Xet-Hash") != ""}
		switch {
		case s.status >= 300 && s.status < 400:
			loc, err := resolveLocation(u, s.header.Get("Location"))
			if err != nil {
				return fileMeta{}, fmt.Errorf("%s: %w", t, err)
			}
			lu, _ := url.Parse(loc)
			if lu != nil && strings.EqualFold(lu.Host, c.host) && s.header.Get("X-Linked-Etag") == "" && hops < 5 {
				u = loc // relative redirect: a renamed repository
				continue
			}
			m.url = loc
		case s.status != http.StatusOK:
			return fileMeta{}, c.httpError(http.MethodHead, s, t)
		}
		etag, ok := NormalizeETag(s.header.Get("X-Linked-Etag"))
		if !ok {
			etag, ok = NormalizeETag(s.header.Get("ETag"))
		}
		if !ok {
			return fileMeta{}, fmt.Errorf("%s: HEAD %s: the answer has no usable ETag, so the download could not be verified (is HF_ENDPOINT a Hugging Face hub, or is a proxy rewriting answers?)", t, stripQuery(u))
		}
		m.etag = etag
		sz := s.header.Get("X-Linked-Size")
		if sz == "" && s.status == http.StatusOK {
			sz = s.header.Get("Content-Length")
		}
		n, err := strconv.ParseInt(sz, 10, 64)
		if err != nil || n < 0 {
			return fileMeta{}, fmt.Errorf("%s: HEAD %s: the answer gives no file size (X-Linked-Size or Content-Length)", t, stripQuery(u))
		}
		m.size = n
		if m.commit == "" {
			return fileMeta{}, fmt.Errorf("%s: HEAD %s: the answer has no X-Repo-Commit header: HF_ENDPOINT %s does not look like a Hugging Face hub (or a proxy strips its headers)", t, stripQuery(u), c.cfg.Endpoint)
		}
		if m.commit != commit {
			return fileMeta{}, fmt.Errorf("%s: HEAD %s: the hub answered for commit %s, not %s", t, stripQuery(u), m.commit, commit)
		}
		return m, nil
	}
}
