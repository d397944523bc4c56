package metrics

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAggregateForeignAndTruncated (issue 34, case 14): a foreign JSON
// object used to be accepted as an aggregate, and a truncated aggregate's
// error told the user to run `agentperf report`, the command that had
// just failed on it.
func TestAggregateForeignAndTruncated(t *testing.T) {
	if _, err := DecodeAggregateFile([]byte(`{"name":"x","items":[1,2]}`)); err == nil || !strings.Contains(err.Error(), "not an aggregate export") {
		t.Errorf("a foreign object: %v, want it refused", err)
	}
	for _, ok := range []string{`{"aiperf_version":"1"}`, `{"request_count":{"avg":3}}`, `{"x":{"unit":"ms","avg":1}}`} {
		if _, err := DecodeAggregateFile([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileRecords), nil, 0o644)
	os.WriteFile(filepath.Join(dir, FileAggregateJSON), []byte(`{"aiperf_version":"1","benchmark_id":`), 0o644)
	_, err := Recompute(dir, nil)
	if !errors.Is(err, ErrBadAggregate) || strings.Contains(err.Error(), "agentperf report") || !strings.Contains(err.Error(), "move it aside") {
		t.Errorf("a truncated aggregate: %v; want ErrBadAggregate saying what to do, not to run report", err)
	}
}
