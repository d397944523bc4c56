package run

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/codectest"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/timing"
)

// randomManifest is a finished shard's manifest from seed, its strings
// from s.
func randomManifest(seed uint64, s string) *ShardManifest {
	rng := rand.New(rand.NewPCG(seed, 5))
	gen, _ := timing.LookupGeneration(timing.DefaultGeneration)
	at := time.Unix(0, rng.Int64N(1<<62)).UTC()
	res := &replay.Result{BenchmarkID: "run-" + s, Generation: gen, StartTime: at, ProfilingStart: at.Add(time.Second),
		EndTime: at.Add(time.Hour), Accounting: metrics.Accounting{Sent: rng.IntN(1000)}, Aborted: s, StartTurns: []int{rng.IntN(9), -1},
		ProfilingUserCPU: time.Duration(rng.Int64N(1e12))}
	limit := rng.Float64()
	m := &ShardManifest{Format: shardFormat, RunID: "run-" + s, Index: rng.IntN(8), Count: 8, Seed: rng.Int64(), Argv: []string{"profile", s, "--x=" + s},
		CorpusDigest: s, Clock: ClockOffset{OffsetNs: rng.Int64N(1e9) - 5e8, RTTNs: rng.Int64N(1e6), Measured: rng.IntN(2) == 0}, Stop: s,
		Result: res,
		Finish: &shardFinish{Scenario: s, Generation: "v1.0", DurationNs: rng.Int64N(1e12), Concurrency: rng.IntN(512), OverflowRateLimit: &limit,
			InputConfig: map[string]any{"concurrency": float64(rng.IntN(512)), "s": s, "l": []any{1.5, true, nil}},
			Corpus:      dataset.Identity{SourceType: "hf", Loader: s, Traces: rng.IntN(200)}, Described: Described{Synthesis: map[string]any{"seed": 42.0}},
			Warnings: []string{s, "w"}, SliceDurationNs: int64(time.Second), Version: "agentperf-test", ServerDerived: map[string]any{"gpu_kv_usage_peak": 0.5}}}
	return m
}

// FuzzShardManifestRoundTrip: a shard's manifest survives Encode →
// DecodeShardManifest: the identity, clock, stop and what Merge finishes
// with come back equal, and the bytes are a fixed point.
func FuzzShardManifestRoundTrip(f *testing.F) {
	f.Add(uint64(1), "")
	f.Add(uint64(2), "a\"b\\c\x00é<&>\xff")
	f.Fuzz(func(t *testing.T, seed uint64, s string) {
		s = strings.ToValidUTF8(s, "") // encoding/json replaces invalid bytes
		m := randomManifest(seed, s)
		back, _ := codectest.RoundTrip(t, m, (*ShardManifest).Encode, DecodeShardManifest)
		if back.RunID != m.RunID || back.Stop != m.Stop || !reflect.DeepEqual(back.Argv, m.Argv) || back.Index != m.Index || back.Count != m.Count || back.Seed != m.Seed || back.Clock != m.Clock ||
			back.Finish.Corpus != m.Finish.Corpus || !reflect.DeepEqual(back.Finish.Warnings, m.Finish.Warnings) || back.Finish.DurationNs != m.Finish.DurationNs ||
			*back.Finish.OverflowRateLimit != *m.Finish.OverflowRateLimit || back.Result.Accounting != m.Result.Accounting ||
			!back.Result.ProfilingStart.Equal(m.Result.ProfilingStart) || back.Result.Generation.Name != m.Result.Generation.Name {
			t.Fatalf("decoded %+v\nwant %+v", back, m)
		}
	})
}

// FuzzDecodeShardManifest: any bytes either decode or give an error,
// never a panic; what decodes encodes to a fixed point.
func FuzzDecodeShardManifest(f *testing.F) {
	b, _ := randomManifest(3, "x").Encode()
	f.Add(b)
	f.Add([]byte(`{"format":1,"result":{"StartTime":"2026-01-02T03:04:05.123+05:30"},"finish":{"input_config":{"a":[1e300,null]}}}`))
	f.Add([]byte(`{"format":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		codectest.FixedPoint(t, b, DecodeShardManifest, (*ShardManifest).Encode)
	})
}

// TestReadShardManifestErrors: a manifest of another format, one that is
// not a finished shard's, and a malformed one are refused, naming the file.
func TestReadShardManifestErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ body, want string }{
		{`{"format":2}`, "format 2, this agentperf reads format 1"},
		{`{"format":1,"run_id":"r"}`, "incomplete manifest"},
		{`{"format":1,"shard":"zero"}`, "ShardManifest.shard"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, FileShard), []byte(c.body), 0o644)
		_, err := ReadShardManifest(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Join(dir, FileShard)) {
			t.Errorf("%s: %v, want an error naming the file and %q", c.body, err, c.want)
		}
	}
}

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
