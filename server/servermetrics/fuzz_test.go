package servermetrics

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary /metrics pages through the whole ingestion
// path: parse, store two scrapes, build the export and encode it. It must
// never panic, never write a _total counter name, and always produce valid
// JSON (NaN and ±Inf are dropped, not encoded).
func FuzzParse(f *testing.F) {
	f.Add([]byte(vllmPage(3)))
	f.Add([]byte("# TYPE sglang:token_usage gauge\nsglang:token_usage{tp_rank=\"0\"} 0.42\n# TYPE sglang:cached_tokens_total counter\nsglang:cached_tokens_total{cache_source=\"device\"} 12\n"))
	f.Add([]byte("# TYPE rpc summary\nrpc{quantile=\"0.5\"} 1\nrpc_sum 10\nrpc_count 4\n"))
	f.Add([]byte("x_total 1\ny NaN\nz +Inf\n"))
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 1\nh_count 1\nh_sum -Inf\n"))
	f.Add([]byte("broken{ 1\n"))
	f.Fuzz(func(t *testing.T, page []byte) {
		fams, err := newParser().parse(page)
		if err != nil {
			return
		}
		st := newStore([]string{"http://a/metrics"})
		st.add(0, 1e9, fams)
		st.add(0, 2e9, fams)
		ms := st.metrics(window{from: 1e9, to: 2e9, closeAfter: true}, 5e8)
		for name, m := range ms {
			if m.Type == "counter" && strings.HasSuffix(name, "_total") && !strings.Contains(string(page), name+"_total") {
				// a source family literally named x_total_total legitimately
				// exports as x_total: one suffix is removed, never two
				t.Errorf("counter %q keeps its _total suffix", name)
			}
		}
		ex := &Export{SchemaVersion: SchemaVersion, Metrics: ms, WarmupMetrics: map[string]*Metric{}, Summary: st.summary()}
		b, err := json.Marshal(ex)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		if !json.Valid(b) {
			t.Fatal("invalid JSON")
		}
		var sb strings.Builder
		if err := WriteCSV(&sb, ex); err != nil {
			t.Fatalf("csv: %v", err)
		}
		_ = Derive(ex)
	})
}
