package profile

import (
	"encoding/json"
	"net/http"
	neturl "net/url"
	"sort"
	"strings"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
)

// inputConfig is the aggregate's input_config: the resolved settings,
// secrets left out, then Spec.Settings.
func (s *Spec) inputConfig() map[string]any {
	r := &s.Replay
	rev := s.Tokenizer.Options.Revision
	if rev == "" {
		rev = "main"
	}
	cfg := map[string]any{
		"scenario":                   s.Scenario,
		"url":                        RedactURL(r.URL),
		"endpoint":                   r.Endpoint,
		"endpoint_type":              "chat",
		"model_names":                r.Models,
		"tokenizer":                  s.Tokenizer.Name,
		"tokenizer_revision":         rev,
		"concurrency":                r.Concurrency,
		"benchmark_duration":         r.BenchmarkDuration.Seconds(),
		"benchmark_grace_period":     r.GracePeriod.Seconds(),
		"warmup_grace_period":        r.WarmupGracePeriod.Seconds(),
		"random_seed":                r.Seed,
		"failed_request_threshold":   r.FailedRequestThreshold,
		"trajectory_start_min_ratio": r.StartMinRatio,
		"trajectory_start_max_ratio": r.StartMaxRatio,
		"inter_turn_delay_cap":       r.InterTurnDelayCap.Seconds(),
		"trace_idle_gap_cap_seconds": r.TraceIdleGapCap.Seconds(),
		"agentx_generation":          r.Generation.Name,
		"cache_bust":                 string(r.CacheBust),
		"streaming":                  r.Streaming,
		"ignore_eos":                 r.IgnoreEOS,
		"use_server_token_count":     r.UseServerTokenCount,
		"use_legacy_max_tokens":      r.UseLegacyMaxTokens,
		"slice_duration":             s.SliceDuration.Seconds(),
		"server_metrics":             redactURLs(s.ServerMetrics.URLs),
		"output_artifact_dir":        s.OutputDir,
		"unsafe_override":            s.UnsafeOverride,
		"live_assistant_responses":   r.LiveAssistant,
		"key_supplied":               r.APIKey != "", // whether a bearer key was sent (never its value)
	}
	extra := map[string]any{}
	for _, e := range r.ExtraInputs {
		var v any
		if json.Unmarshal(e.Value, &v) == nil {
			extra[e.Key] = v
		}
	}
	if len(extra) > 0 {
		cfg["extra_inputs"] = extra
	}
	if len(r.Headers) > 0 {
		names := make([]string, 0, len(r.Headers))
		for k := range r.Headers {
			names = append(names, k)
		}
		cfg["header_names"] = names // values may hold credentials
	}
	if len(s.ServerMetrics.Headers) > 0 {
		names := make([]string, 0, len(s.ServerMetrics.Headers))
		for k := range s.ServerMetrics.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		cfg["server_metrics_header_names"] = names
	}
	for k, v := range s.Settings {
		cfg[k] = v
	}
	return cfg
}

// inferenceHeaders are the headers the inference requests carry that a
// scrape of the same host repeats: the extra headers and the credentials.
func (s *Spec) inferenceHeaders() http.Header {
	h := http.Header{}
	for k, v := range s.Replay.Headers {
		h.Set(k, v)
	}
	if s.Replay.APIKey != "" {
		h.Set("Authorization", "Bearer "+s.Replay.APIKey)
	}
	if _, auth, err := replay.URLCredentials(s.Replay.URL); err == nil && auth != "" {
		h.Set("Authorization", auth)
	}
	return h
}

// LoaderKind says where a corpus source comes from, for the scenario's
// checks, with the public alias or HF repo it names.
func LoaderKind(src dataset.Source) (kind scenario.LoaderKind, public, hf string) {
	switch {
	case src.PublicDataset != "" && isSynthetic(src.PublicDataset):
		return scenario.LoaderSynthetic, src.PublicDataset, ""
	case src.InputFile != "":
		return scenario.LoaderLocal, src.PublicDataset, ""
	case src.PublicDataset != "":
		return scenario.LoaderPublic, src.PublicDataset, ""
	case src.HFDataset != "":
		return scenario.LoaderHF, "", src.HFDataset
	}
	return scenario.LoaderUnset, "", ""
}

func isSynthetic(public string) bool {
	return public == "synthetic" || strings.HasPrefix(public, "synthetic:")
}

// RedactURL hides the password of a URL's user info (it is a credential).
func RedactURL(s string) string {
	if u, err := neturl.Parse(s); err == nil {
		return u.Redacted()
	}
	return s
}

// redactURLs is RedactURL over a list.
func redactURLs(us []string) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = RedactURL(u)
	}
	return out
}
