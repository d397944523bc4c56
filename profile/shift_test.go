package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/metrics"
)

// TestAppendShiftedMovesTheTimesOnly: a merge moves every timestamp a
// record has by the shard's clock shift, leaves a timestamp that did not
// happen (0) at 0 and every other byte as the shard wrote it, and stops
// at a malformed shard line, naming it.
func TestAppendShiftedMovesTheTimesOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recs := []metrics.RecordLine{
		{Record: metrics.Record{SessionNum: 1, XRequestID: "a", WorkerID: "lane_0001", Phase: metrics.PhaseProfiling,
			CreditIssuedNs: 1_000, RequestStartNs: 2_000, RequestAckNs: 3_000, RequestEndNs: 4_000}, Values: metrics.Compute(&metrics.Record{}), ProcessorID: "p"},
		{Record: metrics.Record{SessionNum: 2, XRequestID: "b\"é", WorkerID: "lane_0002", Phase: metrics.PhaseWarmup,
			RequestStartNs: 5_000, RequestEndNs: 6_000, Cancelled: true, CancellationNs: 6_000}, Values: metrics.Compute(&metrics.Record{}), ProcessorID: "p"},
	}
	var in []byte
	for i := range recs {
		in = metrics.AppendRecordLine(in, &recs[i])
	}
	src := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(src, in, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, shift := range []int64{0, -500} {
		dst := filepath.Join(dir, "out.jsonl")
		os.Remove(dst)
		n, err := appendShifted(src, dst, shift)
		if err != nil || n != 2 {
			t.Fatalf("shift %d: %d records, %v", shift, n, err)
		}
		got, _ := os.ReadFile(dst)
		var want []byte
		for i := range recs {
			l := recs[i]
			shiftTimes(&l.Record, shift)
			want = metrics.AppendRecordLine(want, &l)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("shift %d:\n%s\nwant\n%s", shift, got, want)
		}
		if shift == 0 && !bytes.Equal(got, in) {
			t.Errorf("no shift changed the records:\n%s\n%s", got, in)
		}
	}
	// The second record, shifted by -500: what happened moved, what did
	// not stayed absent.
	f, _ := os.Open(filepath.Join(dir, "out.jsonl"))
	defer f.Close()
	var times [][5]int64
	if _, err := metrics.ReadRecords(f, "out.jsonl", false, func(l *metrics.RecordLine) error {
		r := l.Record
		times = append(times, [5]int64{r.CreditIssuedNs, r.RequestStartNs, r.RequestAckNs, r.RequestEndNs, r.CancellationNs})
		return nil
	}); err != nil || len(times) != 2 {
		t.Fatal(err, times)
	}
	if times[0] != [5]int64{500, 1500, 2500, 3500, 0} || times[1] != [5]int64{0, 4500, 0, 5500, 5500} {
		t.Errorf("shifted times %v", times)
	}
	if err := os.WriteFile(src, append(in, `{"metadata":{"request_start_ns":"x"}}`+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := appendShifted(src, filepath.Join(dir, "bad.jsonl"), 1)
	if err == nil || !strings.Contains(err.Error(), "in.jsonl:3: metadata.request_start_ns") {
		t.Errorf("malformed shard line: %v", err)
	}
}
