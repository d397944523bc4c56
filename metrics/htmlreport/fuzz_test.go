package htmlreport

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzSummary feeds arbitrary bytes as profile_export_aiperf.json: reading
// the summary never panics, and whatever the file holds (names, warnings,
// "</script>" in a string) cannot break out of the page's data block: the
// page keeps exactly its three script elements.
func FuzzSummary(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "run", "profile_export_aiperf.json")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"benchmark_id":"</script><script>alert(1)</script>","metadata":{"warnings":["<!--","</SCRIPT >"]}}`))
	f.Add([]byte(`{"x_metric":{"unit":"ms","avg":1,"p50":"NaN"},"metadata":{"submission_valid":true,"scenario":"s"}}`))
	f.Add([]byte(`[1,2`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := &Data{Title: "agentperf report", Facts: [][2]string{}, Warnings: []string{}, Metrics: []Metric{}, Scalars: []Scalar{}}
		_ = d.fillSummary(b) // an error is fine; a panic is not
		var page bytes.Buffer
		if err := Write(&page, d); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if n := bytes.Count(bytes.ToLower(page.Bytes()), []byte("</script")); n != 3 {
			t.Fatalf("the page has %d script end tags, want 3", n)
		}
	})
}
