package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/dataset"
)

// TestRunAbortsWhenTheCacheFileChanges: the traces come from a mapped
// cache file that is truncated before the lanes build their first prompts
// (the hash ids are read lazily from the mapping). Instead of a SIGBUS
// crash, Run returns a Result aborted with AbortDatasetCacheChanged naming
// the file; no request was sent and the accounting adds up.
func TestRunAbortsWhenTheCacheFileChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.dscache")
	if err := dataset.WriteCache(path, testCorpus(t, 6), dataset.Identity{}); err != nil {
		t.Fatal(err)
	}
	corpus, err := dataset.OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	defer corpus.Close()
	traces, err := corpus.ReadTraces()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	srv := startFaultSim(t, "zero-latency=true")
	sink, ovf := &memSink{}, &memSink{}
	res, err := Run(context.Background(), testConfig(t, srv.URL, traces, sink, ovf))
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != AbortDatasetCacheChanged || !strings.Contains(res.AbortMessage, path) {
		t.Fatalf("Aborted = %q (%s), want %q naming %s", res.Aborted, res.AbortMessage, AbortDatasetCacheChanged, path)
	}
	if err := res.Accounting.Check(); err != nil || res.Accounting.Sent != len(sink.records())+len(ovf.records()) {
		t.Fatalf("accounting %+v (%v) for %d records", res.Accounting, err, len(sink.records()))
	}
	if srv.Stats().Requests != 0 {
		t.Fatalf("the server received %d requests; no prompt could be built", srv.Stats().Requests)
	}
}
