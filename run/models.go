package run

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// Model discovery: a run without a model name asks the server which model
// it serves (docs/replay.md, "The model: --model or /v1/models").

// DiscoverTimeout bounds the /v1/models request (aiperf's 10 s).
const DiscoverTimeout = 10 * time.Second

// maxModelsBody bounds the /v1/models response read (aiperf's 1 MiB).
const maxModelsBody = 1 << 20

// DiscoverOptions is how DiscoverModel reaches the server: the run's
// server URL (http(s)://… or sim://…) and what every request carries.
type DiscoverOptions struct {
	// URL is the server's base URL, as replay.Config.URL (a trailing
	// /v1, /v1/chat/completions or /v1/completions is allowed), or sim://….
	URL string
	// APIKey is sent as a bearer token (replacing any Authorization header).
	APIKey string
	// Headers are the run's extra request headers.
	Headers map[string]string
	// Insecure skips TLS certificate verification.
	Insecure bool
	// Timeout bounds the request (0: DiscoverTimeout).
	Timeout time.Duration
}

// ModelsURL is the /v1/models URL of a server base URL: a trailing "/",
// then a trailing /chat/completions or /completions, are removed, /v1 is
// appended unless the path already ends in it, then /models. The URL must
// be http(s) without a query or fragment.
func ModelsURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return "", fmt.Errorf("server URL %q: %w", redactURL(base), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("server URL %q: want http(s)://host[:port][/path]", redactURL(base))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("server URL %q: a query or fragment has no place in the server's base URL", redactURL(base))
	}
	p := strings.TrimRight(u.Path, "/")
	for _, suffix := range []string{"/chat/completions", "/completions"} {
		if strings.HasSuffix(p, suffix) {
			p = strings.TrimSuffix(p, suffix)
			break
		}
	}
	if !strings.HasSuffix(p, "/v1") {
		p += "/v1"
	}
	u.Path, u.RawPath = p+"/models", ""
	return u.String(), nil
}

// ErrModelDiscovery marks every error of DiscoverModel.
var ErrModelDiscovery = errors.New("model discovery")

// ParseModels reads the ids of an OpenAI-style model list,
// {"data":[{"id":"…"},…]}: data must be an array of objects whose id is a
// non-empty string. Other fields are ignored.
func ParseModels(body []byte) ([]string, error) {
	var v struct {
		Data *[]struct {
			ID *string `json:"id"`
		} `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not a JSON model list: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a JSON model list: data after the object")
	}
	if v.Data == nil {
		return nil, errors.New(`no "data" array (want {"data":[{"id":"MODEL"}]})`)
	}
	ids := make([]string, 0, len(*v.Data))
	for i, m := range *v.Data {
		if m.ID == nil || *m.ID == "" {
			return nil, fmt.Errorf(`data[%d] has no "id" string`, i)
		}
		ids = append(ids, *m.ID)
	}
	return ids, nil
}

// DiscoverModel asks the server which model it serves (GET /v1/models,
// ModelsURL) and returns the one model; no model, several, a server that
// does not answer 200 or an answer that is not a model list is an error
// (wrapping ErrModelDiscovery) naming the URL and saying to pass the model
// by name. A sim:// URL asks the in-process simulator the URL describes.
func DiscoverModel(ctx context.Context, o DiscoverOptions) (string, error) {
	fail := func(where string, err error) error {
		return fmt.Errorf("%w: %s: %w; pass the model name explicitly (--model NAME)", ErrModelDiscovery, where, err)
	}
	if isSim(o.URL) {
		body, err := simModels(o.URL)
		if err != nil {
			return "", fail(o.URL, err)
		}
		return oneModel(o.URL+" (/v1/models)", body, fail)
	}
	mu, err := ModelsURL(o.URL)
	if err != nil {
		return "", fail("cannot ask the server for its model", err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DiscoverTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, mu, nil)
	if err != nil {
		return "", fail("GET "+mu, err)
	}
	for k, v := range o.Headers {
		req.Header.Set(k, v)
	}
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	req.Header.Set("Accept", "application/json")
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: o.Insecure}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return "", fail("GET "+redactURL(mu), unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody+1))
	if err != nil {
		return "", fail("GET "+redactURL(mu), fmt.Errorf("reading the response: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		return "", fail("GET "+redactURL(mu), fmt.Errorf("HTTP %s%s", resp.Status, bodyExcerpt(body)))
	}
	if len(body) > maxModelsBody {
		return "", fail("GET "+redactURL(mu), fmt.Errorf("the response is larger than %d bytes", maxModelsBody))
	}
	return oneModel("GET "+redactURL(mu), body, fail)
}

// oneModel is the one model of a model list, or the error fail makes.
func oneModel(where string, body []byte, fail func(string, error) error) (string, error) {
	ids, err := ParseModels(body)
	if err != nil {
		return "", fail(where, fmt.Errorf("%w%s", err, bodyExcerpt(body)))
	}
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		return "", fail(where, errors.New("the server lists no model; exactly one is needed to choose it without --model"))
	}
	return "", fail(where, fmt.Errorf("the server lists %d models (%s); exactly one is needed to choose it without --model", len(ids), strings.Join(ids, ", ")))
}

// simModels is the /v1/models answer of the in-process simulator a sim://
// URL describes.
func simModels(u string) ([]byte, error) {
	cfg, err := sim.ParseURL(u, sim.DefaultConfig())
	if err != nil {
		return nil, err
	}
	cfg.ZeroLatency = true // no engine goroutines: only the model list is asked for
	if cfg.Tokenizer == nil && cfg.TokenizerName == "" {
		cfg.Tokenizer = tokenizer.Builtin()
	}
	srv, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/models", nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("the simulator answered HTTP %d", rec.Code)
	}
	return rec.Body.Bytes(), nil
}

// bodyExcerpt is the start of a response body for an error message.
func bodyExcerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf(" (body: %q)", s)
}

// redactURL drops user info from a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}

// unwrapURLError drops *url.Error's repetition of the method and URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
