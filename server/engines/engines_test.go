package engines

import (
	"strings"
	"testing"
)

// TestDetect: each engine is named from its families; Dynamo wins over the
// engine metrics its frontend re-exports; an unknown server is named as
// such with its families; nothing seen is "".
func TestDetect(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fams []string
		want string
	}{
		{[]string{"vllm:num_requests_running", "vllm:prefix_cache_hits", "process_cpu_seconds"}, "vllm"},
		{[]string{"sglang:num_running_reqs", "sglang:token_usage"}, "sglang"},
		{[]string{"llamacpp:prompt_tokens", "llamacpp:requests_processing"}, "llamacpp"},
		{[]string{"trtllm_request_success", "trtllm_time_to_first_token_seconds"}, "trtllm"},
		{[]string{"dynamo_frontend_requests", "vllm:num_requests_running", "vllm:kv_cache_usage_perc"}, "dynamo"},
		{[]string{"tgi_request_count", "tgi_queue_size"}, "unknown"},
		{nil, ""},
	}
	for _, c := range cases {
		d := Detect(c.fams)
		if d.Name() != c.want {
			t.Errorf("Detect(%v) = %q, want %q", c.fams, d.Name(), c.want)
		}
		if c.want == "unknown" {
			txt := d.UnknownText(0)
			for _, f := range c.fams {
				if !strings.Contains(txt, f) {
					t.Errorf("unknown text %q does not name family %s", txt, f)
				}
			}
			if !strings.Contains(txt, "docs/engines.md") || !d.Unknown() || d.Known() {
				t.Errorf("unknown text %q / Unknown %v Known %v", txt, d.Unknown(), d.Known())
			}
		}
	}
}

// TestTableComplete: every engine says how it is detected, where its KV
// pool is, how to fix an overflow and which texts are its overflows; an
// engine that lacks the queue or KV figures says so in Missing, so no
// surface shows an empty figure without a reason.
func TestTableComplete(t *testing.T) {
	t.Parallel()
	for _, e := range All() {
		if e.Name == "" || e.Title == "" || len(e.Prefixes) == 0 || e.MetricsPath == "" || e.KVPool == "" || e.OverflowAdvice == "" || len(e.OverflowTexts) == 0 {
			t.Errorf("%s: incomplete entry %+v", e.Name, e)
		}
		if (len(e.KVUsage) == 0 || len(e.Running) == 0) && e.Missing == "" {
			t.Errorf("%s exports no KV usage or queue gauge but Missing says nothing", e.Name)
		}
		for _, n := range append(append(append(e.Running, e.Waiting...), e.KVUsage...), e.PromptTokens...) {
			ok := false
			for _, p := range e.Prefixes {
				ok = ok || strings.HasPrefix(n, p)
			}
			if !ok {
				t.Errorf("%s: metric %s has none of its prefixes %v", e.Name, n, e.Prefixes)
			}
		}
		for _, ex := range e.OverflowExamples {
			hit := false
			for _, s := range OverflowSubstrings() {
				hit = hit || strings.Contains(strings.ToLower(ex), s)
			}
			if !hit {
				t.Errorf("%s: overflow text %q matches none of the substrings", e.Name, ex)
			}
		}
	}
	if e, _ := Lookup("llamacpp"); !e.PromptExcludesCached || len(e.CachedTokens) == 0 {
		t.Error("llama.cpp's prompt counter excludes cached tokens: the table must say so")
	}
}

// TestAdvicePerEngine: the overflow advice names each engine's own
// settings; an unknown engine's names them all.
func TestAdvicePerEngine(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		"vllm":     {"--max-model-len"},
		"sglang":   {"--context-length"},
		"llamacpp": {"-c", "-np", "--kv-unified"},
		"trtllm":   {"max_seq_len"},
		"dynamo":   {"--max-model-len", "--context-length"},
		"unknown":  {"--max-model-len", "--context-length", "-c / -np", "--kv-unified", "max_seq_len"},
	}
	for name, ws := range want {
		a := Advice(name)
		for _, w := range ws {
			if !strings.Contains(a, w) {
				t.Errorf("advice for %s %q lacks %q", name, a, w)
			}
		}
		t.Logf("%s: %s", name, a)
	}
	if strings.Contains(Advice("llamacpp"), "max-model-len") {
		t.Error("llama.cpp's advice names vLLM's flag")
	}
}

// TestNamesMerged: merged lists keep table order and every engine's
// names, once.
func TestNamesMerged(t *testing.T) {
	t.Parallel()
	run := Names(func(e *Engine) []string { return e.Running })
	want := []string{"vllm:num_requests_running", "sglang:num_running_reqs", "dynamo_frontend_inflight_requests", "llamacpp:requests_processing"}
	if strings.Join(run, ",") != strings.Join(want, ",") {
		t.Errorf("running names %v, want %v", run, want)
	}
}
