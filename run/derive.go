package run

import (
	"encoding/json"
	"net/http"
	neturl "net/url"
	"sort"
	"strings"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/text/prompttext"
)

// inputConfig is the aggregate's input_config: the resolved settings,
// secrets left out (the settings of the table, Settings, by their Key),
// then Spec.Settings.
func (s *Spec) inputConfig() map[string]any {
	r := &s.Replay
	rev := s.Tokenizer.Options.Revision
	if rev == "" {
		rev = "main"
	}
	cfg := map[string]any{
		"scenario":                 s.Scenario,
		"url":                      RedactURL(r.URL),
		"endpoint_type":            "chat",
		"tokenizer_revision":       rev,
		"concurrency":              r.Concurrency,
		"warmup_grace_period":      r.WarmupGracePeriod.Seconds(),
		"agentx_generation":        r.Generation.Name,
		"cache_bust":               string(s.CacheBust),
		"num_dataset_entries":      s.Corpus.Options.Select.NumEntries,
		"server_metrics":           RedactURLs(s.ServerMetrics.URLs),
		"live_assistant_responses": r.LiveAssistant,
		"key_supplied":             r.APIKey != "", // whether a bearer key was sent (never its value)
	}
	for _, st := range Settings() {
		if st.Key != "" {
			cfg[st.Key] = st.Recorded(s)
		}
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
		sort.Strings(names)         // sorted, not a map's order: the same flags write the same input_config
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

var _ replay.Threshold = (*scenario.Threshold)(nil)

// threshold is the engine's failed-request threshold (nil when off): the
// scenario's rule at Spec.FailedRequestThreshold, reading the run's tally
// (p's) for its totals.
func (s *Spec) threshold(p *replay.Progress) replay.Threshold {
	if s.FailedRequestThreshold == 0 {
		return nil
	}
	return scenario.NewThreshold(s.FailedRequestThreshold, &p.Tally)
}

// cacheBust is the engine's cache-bust marker for a --cache-bust target:
// the preset's markers (scenario.Marker) at the target's place; none for
// "" and scenario.CacheBustNone.
func cacheBust(cb scenario.CacheBust) replay.CacheBust {
	at := prompttext.FirstUserPrefix
	switch cb {
	case "", scenario.CacheBustNone:
		return replay.CacheBust{}
	case scenario.CacheBustFirstTurnSuffix:
		at = prompttext.FirstUserSuffix
	case scenario.CacheBustSystemPrefix:
		at = prompttext.SystemPrefix
	case scenario.CacheBustSystemSuffix:
		at = prompttext.SystemSuffix
	}
	return replay.CacheBust{Placement: at, Marker: scenario.Marker}
}

// InferenceHeaders are the headers the inference requests carry that a
// scrape, a readiness probe or a cache reset of the same host repeats:
// the extra headers and the credentials.
func (s *Spec) InferenceHeaders() http.Header {
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

// RedactURL returns s as it was typed, with its secrets masked: the
// password of the user info and the value of every query parameter whose
// name says it is a credential (key, token, secret, password, auth,
// signature) become "xxxxx". Nothing else changes ("sim://" stays
// "sim://", where url.URL.String would print "sim:").
func RedactURL(s string) string {
	u, err := neturl.Parse(s)
	if err != nil {
		return s
	}
	out := s
	if _, ok := u.User.Password(); ok {
		// The authority follows "scheme://" or, in a scheme-relative URL,
		// the leading "//"; its user info ends at its last "@", as
		// net/url reads it.
		start := 0
		if u.Scheme != "" {
			start = len(u.Scheme) + 1
		}
		if strings.HasPrefix(out[start:], "//") {
			start += 2
			end := len(out)
			if i := strings.IndexAny(out[start:], "/?#"); i >= 0 {
				end = start + i
			}
			if at := strings.LastIndex(out[start:end], "@"); at >= 0 {
				info := out[start : start+at]
				if colon := strings.Index(info, ":"); colon >= 0 {
					out = out[:start] + info[:colon+1] + "xxxxx" + out[start+at:]
				}
			}
		}
	}
	q := strings.Index(out, "?")
	if q < 0 {
		return out
	}
	frag := ""
	query := out[q+1:]
	if h := strings.Index(query, "#"); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		name, _, hasValue := strings.Cut(p, "=")
		if hasValue && secretParam(name) {
			parts[i] = name + "=xxxxx"
		}
	}
	return out[:q+1] + strings.Join(parts, "&") + frag
}

// secretParam reports whether a query parameter's name says it carries a
// credential: one of its words (split at "-", "_" and ".") is key, token,
// secret, password, auth, signature or the like ("api_key",
// "access_token", "X-Amz-Signature"; not "kv-capacity-tokens").
func secretParam(name string) bool {
	n := strings.ToLower(name)
	if un, err := neturl.QueryUnescape(n); err == nil {
		n = un
	}
	for _, w := range strings.FieldsFunc(n, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		switch w {
		case "key", "apikey", "token", "accesstoken", "secret", "password", "passwd", "pwd", "auth", "authorization",
			"signature", "sig", "credential", "credentials":
			return true
		}
	}
	return false
}

// RedactURLs is RedactURL over a list.
func RedactURLs(us []string) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = RedactURL(u)
	}
	return out
}
