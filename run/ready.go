package run

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentperf/agentperf/internal/jsonx"
)

// The readiness probes of WaitForModel.Mode (aiperf's --wait-for-model-mode).
const (
	// ReadyModels: GET /v1/models answers 200 and lists the run's model.
	ReadyModels = "models"
	// ReadyInference: a one-token chat request to the run's endpoint
	// answers 200.
	ReadyInference = "inference"
	// ReadyBoth: ReadyModels, then ReadyInference.
	ReadyBoth = "both"
)

// DefaultReadyInterval is the time between two readiness probes
// (aiperf's --wait-for-model-interval default).
const DefaultReadyInterval = 5 * time.Second

// ErrNotReady is wrapped by the error of a server that did not become
// ready within WaitForModel.Timeout.
var ErrNotReady = errors.New("the server did not become ready")

// WaitForModel is the readiness wait before a run's first request
// (aiperf's --wait-for-model-timeout, --wait-for-model-mode and
// --wait-for-model-interval): the server is probed every Interval until it
// answers, for at most Timeout.
type WaitForModel struct {
	// Timeout bounds the wait (0: no wait, the first request goes out at
	// once, as aiperf's default).
	Timeout time.Duration
	// Interval is the time between probes (0: DefaultReadyInterval).
	Interval time.Duration
	// Mode is ReadyModels, ReadyInference or ReadyBoth ("": ReadyInference,
	// aiperf's default).
	Mode string
}

func (w WaitForModel) validate() error {
	switch {
	case w.Timeout < 0:
		return fmt.Errorf("profile: Spec.WaitForModel.Timeout %v: want 0 (no wait) or a positive duration", w.Timeout)
	case w.Interval < 0:
		return fmt.Errorf("profile: Spec.WaitForModel.Interval %v: want a positive duration (0: %v)", w.Interval, DefaultReadyInterval)
	}
	switch w.Mode {
	case "", ReadyModels, ReadyInference, ReadyBoth:
		return nil
	}
	return fmt.Errorf("profile: Spec.WaitForModel.Mode %q: want %s, %s or %s", w.Mode, ReadyModels, ReadyInference, ReadyBoth)
}

// waitReady probes the server of s until it is ready (WaitForModel), and
// logs each failed probe with the time waited. The in-process simulator
// is ready once started.
func waitReady(ctx context.Context, s *Spec, logf func(string, ...any)) error {
	w := s.WaitForModel
	if w.Timeout <= 0 || isSim(s.Replay.URL) {
		return nil
	}
	interval := w.Interval
	if interval <= 0 {
		interval = DefaultReadyInterval
	}
	mode := w.Mode
	if mode == "" {
		mode = ReadyInference
	}
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: s.Replay.Insecure}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start := time.Now()
	deadline := start.Add(w.Timeout)
	logf("waiting for the server to be ready (%s probe every %v, for at most %v)", mode, interval, w.Timeout)
	for attempt := 1; ; attempt++ {
		pctx, cancel := context.WithDeadline(ctx, minTime(deadline, time.Now().Add(max(interval, 10*time.Second))))
		err := probeReady(pctx, client, s, mode)
		cancel()
		if err == nil {
			logf("server ready after %v (%d probe(s))", time.Since(start).Round(100*time.Millisecond), attempt)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		waited := time.Since(start)
		if !time.Now().Add(interval).Before(deadline) {
			return fmt.Errorf("%w within Spec.WaitForModel.Timeout %v (%d probes): %w; check that the server is up at %s, or wait longer", ErrNotReady, w.Timeout, attempt, err, RedactURL(s.Replay.URL))
		}
		logf("server not ready yet (%v of %v waited): %v", waited.Round(100*time.Millisecond), w.Timeout, err)
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// probeReady is one readiness probe of mode.
func probeReady(ctx context.Context, client *http.Client, s *Spec, mode string) error {
	base, _, err := splitCredentials(s.Replay.URL)
	if err != nil {
		return err
	}
	if mode == ReadyModels || mode == ReadyBoth {
		mu, err := ModelsURL(base)
		if err != nil {
			return err
		}
		body, err := readyGet(ctx, client, s, http.MethodGet, mu, nil)
		if err != nil {
			return err
		}
		ids, err := ParseModels(body)
		if err != nil {
			return fmt.Errorf("GET %s: %w", redactURL(mu), err)
		}
		if len(s.Replay.Models) > 0 && !slices.Contains(ids, s.Replay.Models[0]) {
			return fmt.Errorf("GET %s lists %q, not the run's model %q yet", redactURL(mu), ids, s.Replay.Models[0])
		}
	}
	if mode == ReadyInference || mode == ReadyBoth {
		model := ""
		if len(s.Replay.Models) > 0 {
			model = s.Replay.Models[0]
		}
		iu := strings.TrimRight(base, "/") + s.Replay.Endpoint
		body := jsonx.AppendString([]byte(`{"model":`), model)
		body = append(body, `,"messages":[{"role":"user","content":"ping"}],"max_tokens":1,"stream":false}`...)
		if _, err := readyGet(ctx, client, s, http.MethodPost, iu, body); err != nil {
			return err
		}
	}
	return nil
}

// splitCredentials is the URL without user:password.
func splitCredentials(raw string) (string, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", err
	}
	user := ""
	if u.User != nil {
		user = u.User.String()
	}
	u.User = nil
	return u.String(), user, nil
}

// readyGet sends one probe request and returns the body of a 200 answer.
func readyGet(ctx context.Context, client *http.Client, s *Spec, method, u string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header = s.InferenceHeaders()
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, redactURL(u), unwrapURLError(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the response: %w", method, redactURL(u), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: HTTP %s%s", method, redactURL(u), resp.Status, bodyExcerpt(b))
	}
	return b, nil
}
