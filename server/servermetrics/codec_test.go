package servermetrics

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/internal/codectest"
)

// checkRoundTrip: ex encodes, decodes to an equal Export, and encodes
// again to the same bytes.
func checkRoundTrip(t *testing.T, ex *Export) {
	t.Helper()
	back, b := codectest.RoundTrip(t, ex, Encode, Decode)
	want := *ex
	want.InputConfig = back.InputConfig // any: decoded as encoding/json decodes it
	if !reflect.DeepEqual(normalized(&want), normalized(back)) {
		t.Fatalf("decoded export differs from the one encoded:\n%s", b)
	}
}

// normalized is ex with its empty maps and lists nil (Encode writes them
// as it writes nil ones where they are omitempty).
func normalized(ex *Export) *Export {
	cp := *ex
	for _, ms := range []map[string]*Metric{cp.Metrics, cp.WarmupMetrics} {
		for _, m := range ms {
			for _, s := range m.Series {
				if len(s.Labels) == 0 {
					s.Labels = nil
				}
				if len(s.Buckets) == 0 {
					s.Buckets = nil
				}
				if len(s.Timeslices) == 0 {
					s.Timeslices = nil
				}
			}
		}
	}
	if len(cp.Summary.EndpointInfo) == 0 {
		cp.Summary.EndpointInfo = nil
	}
	if len(cp.Summary.EndpointFailures) == 0 {
		cp.Summary.EndpointFailures = nil
	}
	return &cp
}

// FuzzExportRoundTrip: the export of any scrape sequence (the scripts of
// FuzzScrapeSequence) survives Encode → Decode → Encode: every figure,
// label, bucket and timeslice comes back, and the bytes are a fixed point.
func FuzzExportRoundTrip(f *testing.F) {
	for _, s := range scrapeScriptSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 1<<16 {
			return
		}
		ex := runScrapeScript(t, script)
		ex.InputConfig = map[string]any{"endpoint": map[string]any{"urls": []any{"http://x<&>"}}, "n": 3.5}
		checkRoundTrip(t, ex)
	})
}

// FuzzDecodeExport: any bytes either decode or give an error, never a
// panic; what decodes encodes to a fixed point.
func FuzzDecodeExport(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", JSONFile+".golden")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"schema_version":"1.0","metrics":{"g":{"type":"gauge","series":[{"endpoint_url":"u","stats":{"avg":1e-7}}]}},"input_config":[1,{"a":null}]}`))
	f.Add([]byte(`{"summary":{"endpoint_info":{"u":{"avg_update_interval_ms":null}}},"extra":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		codectest.FixedPoint(t, b, Decode, Encode)
	})
}

// TestReadExportNamesTheField: a malformed export names the file and the
// field whose value has the wrong type.
func TestReadExportNamesTheField(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), JSONFile)
	os.WriteFile(path, []byte(`{"metrics":{"g":{"type":"gauge","series":[{"endpoint_url":"u","stats":{"avg":"high"}}]}}}`), 0o644)
	_, err := ReadExport(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "metrics.series.stats.avg") {
		t.Errorf("ReadExport: %v", err)
	}
}

// TestHasMetricPrefix: the launcher's check is a search of the file's
// text for `"<prefix>`, also across the reader's chunks.
func TestHasMetricPrefix(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), JSONFile)
	pad := strings.Repeat(" ", 1<<16-3)
	os.WriteFile(path, []byte(`{`+pad+`"vllm:num_requests_running": {}}`), 0o644)
	for prefix, want := range map[string]bool{"vllm:": true, "sglang:": false, "vllm:num_requests_running": true} {
		if got, err := HasMetricPrefix(path, prefix); err != nil || got != want {
			t.Errorf("HasMetricPrefix(%q) = %v, %v; want %v", prefix, got, err, want)
		}
	}
	if _, err := HasMetricPrefix(path+".missing", "vllm:"); err == nil {
		t.Error("a missing file is not an error")
	}
}
