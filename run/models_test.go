package run

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestModelsURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://localhost:8000":                         "http://localhost:8000/v1/models",
		"http://localhost:8000/":                        "http://localhost:8000/v1/models",
		"http://localhost:8000/v1":                      "http://localhost:8000/v1/models",
		"http://localhost:8000/v1/":                     "http://localhost:8000/v1/models",
		"https://host/proxy/v1/chat/completions":        "https://host/proxy/v1/models",
		"https://host/proxy/v1/completions":             "https://host/proxy/v1/models",
		"http://h:1/prefix":                             "http://h:1/prefix/v1/models",
		"http://u:p@h:1":                                "http://u:p@h:1/v1/models",
		"http://[::1]:8000/openai/v1/chat/completions/": "http://[::1]:8000/openai/v1/models",
	} {
		got, err := ModelsURL(in)
		if err != nil || got != want {
			t.Errorf("ModelsURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"localhost:8000", "ftp://h/", "http://h/?x=1", "http://h/#f", "http://", "::"} {
		if got, err := ModelsURL(in); err == nil {
			t.Errorf("ModelsURL(%q) = %q, want an error", in, got)
		}
	}
}

func TestParseModels(t *testing.T) {
	t.Parallel()
	ok := map[string][]string{
		`{"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model","max_model_len":40960}]}`: {"Qwen/Qwen3-8B"},
		`{"data":[{"id":"a"},{"id":"b"}]}`: {"a", "b"},
		`{"data":[]}`:                      {},
	}
	for body, want := range ok {
		got, err := ParseModels([]byte(body))
		if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("ParseModels(%s) = %q, %v; want %q", body, got, err, want)
		}
	}
	for _, body := range []string{``, `[]`, `{}`, `{"data":null}`, `{"data":{}}`, `{"data":[{}]}`, `{"data":[{"id":""}]}`,
		`{"data":[{"id":5}]}`, `{"data":["m"]}`, `{"data":[{"id":"m"}]} {}`, `<html>502</html>`} {
		if got, err := ParseModels([]byte(body)); err == nil {
			t.Errorf("ParseModels(%s) = %q, want an error", body, got)
		}
	}
}

// FuzzParseModels: no input panics; what parses is valid JSON whose every
// id is non-empty, and matches what encoding/json reads from it.
func FuzzParseModels(f *testing.F) {
	for _, s := range []string{`{"object":"list","data":[{"id":"m","object":"model"}]}`, `{"data":[{"id":"a"},{"id":"b"}]}`, `{"data":[]}`, `{}`, `{"data":[{"id":""}]}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := ParseModels(b)
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("ParseModels accepted invalid JSON %q", b)
		}
		var v struct {
			Data []map[string]any `json:"data"`
		}
		if err := json.Unmarshal(b, &v); err != nil || len(v.Data) != len(ids) {
			t.Fatalf("ParseModels(%q) = %q, but encoding/json reads %v (%v)", b, ids, v.Data, err)
		}
		for i, id := range ids {
			if id == "" || v.Data[i]["id"] != id {
				t.Fatalf("ParseModels(%q)[%d] = %q, encoding/json reads %v", b, i, id, v.Data[i]["id"])
			}
		}
	})
}

// TestDiscoverModel asks a tiny in-test server and the in-process
// simulator: exactly one model is the answer; none, several, an error
// status, a malformed body or an unreachable server is an error naming
// the URL and --model.
func TestDiscoverModel(t *testing.T) {
	t.Parallel()
	serve := func(status int, body string, seen *http.Header) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
				http.NotFound(w, r)
				return
			}
			if seen != nil {
				*seen = r.Header.Clone()
			}
			w.WriteHeader(status)
			w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	ctx := context.Background()

	var seen http.Header
	u := serve(200, `{"object":"list","data":[{"id":"deepseek-ai/DeepSeek-V3","object":"model"}]}`, &seen)
	m, err := DiscoverModel(ctx, DiscoverOptions{URL: u + "/v1/chat/completions", APIKey: "sk-1", Headers: map[string]string{"X-Team": "a", "Authorization": "Bearer old"}})
	if err != nil || m != "deepseek-ai/DeepSeek-V3" {
		t.Fatalf("one model: %q, %v", m, err)
	}
	if seen.Get("Authorization") != "Bearer sk-1" || seen.Get("X-Team") != "a" {
		t.Errorf("the request's headers %v: want the API key as bearer token and the run's headers", seen)
	}

	for name, tc := range map[string]struct {
		url  string
		want string
	}{
		"none":      {serve(200, `{"data":[]}`, nil), "lists no model"},
		"several":   {serve(200, `{"data":[{"id":"a"},{"id":"b"}]}`, nil), "lists 2 models (a, b)"},
		"status":    {serve(401, `{"error":"bad key"}`, nil), "HTTP 401 Unauthorized (body: \"{\\\"error\\\":\\\"bad key\\\"}\")"},
		"malformed": {serve(200, `<html>proxy</html>`, nil), "not a JSON model list"},
		"no data":   {serve(200, `{"models":["m"]}`, nil), `no "data" array`},
		"redirect":  {serve(302, ``, nil), "HTTP 302"},
		"unreachable": {func() string {
			s := httptest.NewServer(http.NotFoundHandler())
			s.Close()
			return s.URL
		}(), "connect"},
	} {
		_, err := DiscoverModel(ctx, DiscoverOptions{URL: tc.url})
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrModelDiscovery) || !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.url+"/v1/models") || !strings.Contains(msg, "--model NAME") {
			t.Errorf("%s: error %q: want ErrModelDiscovery naming %s/v1/models, %q and --model NAME", name, msg, tc.url, tc.want)
		}
	}

	for url, want := range map[string]string{"sim://": "agentperf-sim", "sim://?model=org/served&zero-latency=true": "org/served"} {
		if m, err := DiscoverModel(ctx, DiscoverOptions{URL: url}); err != nil || m != want {
			t.Errorf("DiscoverModel(%s) = %q, %v; want %q", url, m, err, want)
		}
	}
	if _, err := DiscoverModel(ctx, DiscoverOptions{URL: "sim://?bogus=1"}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("bad sim URL: %v", err)
	}
}
