package servermetrics

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGoldenExport pins the whole JSON and CSV export of the two-engine
// fixture (hand-checked figures in TestCounterStatsAndSlices and
// TestDerivedTwoEnginesGaugesNotSummed). The httptest URL is replaced by
// http://fixture, and the local-time start/end strings are normalised.
// Run with -update after an intended format change and review the diff.
func TestGoldenExport(t *testing.T) {
	t.Parallel()
	r := newRig(t, vllmPage)
	s := New(Config{URLs: []string{r.url()}, SliceDuration: time.Second, Clock: r.clock,
		BenchmarkID: "golden", AIPerfVersion: "agentperf-test"})
	collect(t, r, s, 17)
	dir := t.TempDir()
	if _, err := s.Export(dir); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(r.srv.URL, "http://")
	for _, name := range []string{JSONFile, CSVFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(host), []byte("fixture"))
		b = bytes.ReplaceAll(b, []byte(isoLocal(r.at(0).UnixNano())), []byte("START"))
		b = bytes.ReplaceAll(b, []byte(isoLocal(r.at(17).UnixNano())), []byte("END"))
		golden := filepath.Join("testdata", name+".golden")
		if *update {
			if err := os.WriteFile(golden, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -run TestGoldenExport -update to create it)", err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s differs from %s; rerun with -update and review the diff.\ngot:\n%s", name, golden, b)
		}
	}
}
