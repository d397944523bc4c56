package run

import (
	"fmt"
	"net/http"
	neturl "net/url"
	"strings"

	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
)

// TextSetting is one row of the table of the settings whose flag takes
// text the library parses into something else (TextSettings): headers,
// extra request fields, the cache-bust target, the scrape URLs. A CLI
// keeps each row's flag values as typed and, once the flags are parsed,
// hands them to Apply; it writes no per-field code.
type TextSetting struct {
	// Flag is the flag's name, without the dashes.
	Flag string
	// Short is its one-letter shorthand ("" = none).
	Short string
	// Field is the field as Apply's errors name it ("Config.Headers").
	Field string
	// Repeated: every use of the flag adds one value.
	Repeated bool
	// List: a use of the flag may hold several values, comma-separated
	// (and, for a flag that takes several arguments, space-separated).
	List bool
	// Help is the flag's help text.
	Help string

	apply func(s *Spec, vals []string) error
}

// Apply parses vals, the flag's values in the order given (none: the flag
// was not given), into s. It is called for every row, given or not.
func (t TextSetting) Apply(s *Spec, vals []string) error { return t.apply(s, vals) }

// TextSettings is the table of the text settings, in the order of
// `profile --help`'s groups.
func TextSettings() []TextSetting {
	return []TextSetting{
		{Flag: "header", Short: "H", Field: "Config.Headers", Repeated: true,
			Help: "extra HTTP header 'Name: value' (repeatable)",
			apply: func(s *Spec, vals []string) (err error) {
				s.Replay.Headers, err = parseHeaders("Config.Headers", vals)
				return err
			}},
		{Flag: "extra-inputs", Field: "Config.ExtraInputs", Repeated: true,
			Help:  "extra request body field key:value (JSON value or string) or a JSON object (repeatable)",
			apply: applyExtraInputs},
		{Flag: "server-metrics", Field: "Spec.ServerMetrics.URLs", List: true,
			Help:  "extra Prometheus /metrics URLs to scrape (space- or comma-separated)",
			apply: applyServerMetrics},
		{Flag: "server-metrics-header", Field: "Spec.ServerMetrics.Headers", Repeated: true,
			Help: "HTTP header 'Name: value' sent with every /metrics scrape (repeatable); scrapes of --url's host also get the -H headers and the credentials",
			apply: func(s *Spec, vals []string) error {
				h, err := parseHeaders("Spec.ServerMetrics.Headers", vals)
				s.ServerMetrics.Headers = http.Header{}
				for k, v := range h {
					s.ServerMetrics.Headers.Set(k, v)
				}
				return err
			}},
		{Flag: "cache-bust", Field: "Spec.CacheBust",
			Help:  "cache-bust marker placement: none, system_prefix, system_suffix, first_turn_prefix, first_turn_suffix (scenario: first_turn_prefix)",
			apply: applyCacheBust},
	}
}

// parseHeaders parses header lines 'Name: value' into a map, for the
// setting field (as an error names it). A malformed line is an error that
// shows its first four characters only: the value may be a credential.
func parseHeaders(field string, lines []string) (map[string]string, error) {
	out := map[string]string{}
	for _, h := range lines {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%s %q: expected 'Name: value'", field, redactHeader(h))
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// redactHeader keeps a malformed header line's shape without its text.
func redactHeader(h string) string {
	if len(h) <= 4 {
		return h
	}
	return h[:4] + "…"
}

func applyExtraInputs(s *Spec, vals []string) error {
	s.Replay.ExtraInputs = nil
	for _, v := range vals {
		e, err := replay.ParseExtraInput(v)
		if err != nil {
			return err
		}
		s.Replay.ExtraInputs = append(s.Replay.ExtraInputs, e...)
	}
	return nil
}

// applyServerMetrics takes the scrape URLs as given, each an http(s) URL
// with a host, and records them (credentials redacted) in input_config.
func applyServerMetrics(s *Spec, vals []string) error {
	for _, m := range vals {
		if u, err := neturl.Parse(m); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("Spec.ServerMetrics.URLs %q: want an http(s)://host[:port]/metrics URL (the in-process simulator's /metrics is scraped by itself with --url sim://)", RedactURL(m))
		}
	}
	s.ServerMetrics.URLs = append([]string(nil), vals...)
	if s.Settings == nil {
		s.Settings = map[string]any{}
	}
	// aiperf's input_config records the URLs as given (the library
	// records every scraped URL elsewhere).
	s.Settings["server_metrics"] = RedactURLs(vals)
	return nil
}

func applyCacheBust(s *Spec, vals []string) error {
	s.CacheBust = scenario.CacheBustNone
	if len(vals) == 0 || vals[len(vals)-1] == "" {
		return nil
	}
	c, err := scenario.ParseCacheBust(vals[len(vals)-1])
	if err != nil {
		return err
	}
	s.CacheBust = c
	return nil
}

// RefusedSetting is an aiperf flag agentperf parses but refuses, with
// the reason: a command line that carries it exits 2 naming it, instead
// of an "unknown flag" or, worse, a run that ignores it.
type RefusedSetting struct {
	// Flag is the flag's name, without the dashes.
	Flag string
	// Bool: the flag takes no value.
	Bool bool
	// Why is the reason printed.
	Why string
}

// RefusedSettings is the table of the refused aiperf flags, by name.
func RefusedSettings() []RefusedSetting {
	return []RefusedSetting{
		{Flag: "fixed-schedule", Bool: true, Why: "only the agentic replay timing mode exists in agentperf"},
		{Flag: "ignore-trace-delays", Bool: true, Why: "not supported: recorded inter-turn delays are part of the workload"},
		{Flag: "profile-run-disable-warmup-after-first", Bool: true, Why: "every profile run replays its warmup (the AgentX lanes' start states are built by it); see docs/repeated-runs.md"},
		{Flag: "prompt-corpus", Why: "agentperf synthesizes prompts from its own coding-agent corpus only"},
		{Flag: "request-count", Why: "only the agentic replay timing mode exists; the run is bounded by --benchmark-duration"},
		{Flag: "request-rate", Why: "only the agentic replay timing mode exists in agentperf"},
		{Flag: "synthesis-max-isl", Why: "input truncation would change the recorded prefix structure; not supported"},
	}
}
