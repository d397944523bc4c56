package dataset

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
)

func synthBytes(t testing.TB, opt SynthOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJSONL(&b, Synthesize(opt)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSynthesizeDeterministic(t *testing.T) {
	t.Parallel()
	a := synthBytes(t, SynthOptions{Seed: 7, Traces: 6, Subagents: true})
	b := synthBytes(t, SynthOptions{Seed: 7, Traces: 6, Subagents: true})
	if !bytes.Equal(a, b) {
		t.Fatal("same seed gave different corpora")
	}
	if c := synthBytes(t, SynthOptions{Seed: 8, Traces: 6, Subagents: true}); bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same corpus")
	}
	// trace i depends only on (seed, i): a smaller corpus is a prefix
	small := synthBytes(t, SynthOptions{Seed: 7, Traces: 3, Subagents: true})
	if !bytes.HasPrefix(a, small) {
		t.Error("3-trace corpus is not a prefix of the 6-trace corpus")
	}
}

func TestSynthesizeRoundTrip(t *testing.T) {
	t.Parallel()
	want := Synthesize(SynthOptions{Seed: 3, Traces: 8, Subagents: true})
	var b bytes.Buffer
	if err := WriteJSONL(&b, want); err != nil {
		t.Fatal(err)
	}
	got, st, err := ReadJSONL(bytes.NewReader(b.Bytes()), "synth.jsonl", ReadOptions{})
	if err != nil {
		t.Fatalf("synthetic corpus does not validate: %v", err)
	}
	if len(got) != len(want) || st.SubagentEntries == 0 {
		t.Fatalf("read %d traces (%+v), want %d with subagents", len(got), st, len(want))
	}
	for i := range want {
		if d := diffTrace(&got[i], &want[i]); d != "" {
			t.Fatalf("trace %d: %s", i, d)
		}
	}
	var again bytes.Buffer
	WriteJSONL(&again, got)
	if !bytes.Equal(again.Bytes(), b.Bytes()) {
		t.Error("write → read → write is not stable")
	}
}

// diffTrace compares two traces field by field (NaN equals NaN).
func diffTrace(a, b *Trace) string {
	if a.ID != b.ID || a.BlockSize != b.BlockSize || a.HashIDScope != b.HashIDScope || a.ToolTokens != b.ToolTokens || a.SystemTokens != b.SystemTokens || !eqStrings(a.Models, b.Models) {
		return "header differs"
	}
	if d := diffRequests(a.Requests, b.Requests); d != "" {
		return d
	}
	return diffSubagents(a.Subagents, b.Subagents)
}

func feq(a, b float64) bool { return a == b || (a != a && b != b) }

func eqStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func diffRequests(a, b []Request) string {
	if len(a) != len(b) {
		return "request count differs"
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if !feq(x.T, y.T) || x.Type != y.Type || x.Model != y.Model || x.In != y.In || x.Out != y.Out || x.Stop != y.Stop ||
			!feq(x.APITime, y.APITime) || !feq(x.ThinkTime, y.ThinkTime) || !feq(x.TTFT, y.TTFT) ||
			!eqStrings(x.InputTypes, y.InputTypes) || !eqStrings(x.OutputTypes, y.OutputTypes) || len(x.HashIDs) != len(y.HashIDs) {
			return "request fields differ"
		}
		for j := range x.HashIDs {
			if x.HashIDs[j] != y.HashIDs[j] {
				return "hash ids differ"
			}
		}
	}
	return ""
}

func diffSubagents(a, b []Subagent) string {
	if len(a) != len(b) {
		return "subagent count differs"
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.After != y.After || !feq(x.T, y.T) || x.AgentID != y.AgentID || x.SubagentType != y.SubagentType || !feq(x.DurationMs, y.DurationMs) ||
			x.TotalTokens != y.TotalTokens || x.ToolUseCount != y.ToolUseCount || x.Status != y.Status || !eqStrings(x.Models, y.Models) ||
			x.ToolTokens != y.ToolTokens || x.SystemTokens != y.SystemTokens {
			return "subagent fields differ"
		}
		if d := diffRequests(x.Requests, y.Requests); d != "" {
			return "subagent " + d
		}
		if d := diffSubagents(x.Subagents, y.Subagents); d != "" {
			return d
		}
	}
	return ""
}

// TestSynthesizeShape checks that the default corpus has the properties
// replay and the demo rely on, in ranges around the recorded corpus.
func TestSynthesizeShape(t *testing.T) {
	t.Parallel()
	traces := Synthesize(SynthOptions{Seed: 42, Subagents: true})
	st := ComputeStats(traces)
	if st.Traces != 40 || st.RequestsPerTrace.Min < 30 || st.RequestsPerTrace.Max > 120 {
		t.Errorf("traces %d, turns %v–%v; want 40 traces of 30–120 turns", st.Traces, st.RequestsPerTrace.Min, st.RequestsPerTrace.Max)
	}
	if r := st.TheoreticalHitRate.Rate; r < 0.85 || r > 0.995 {
		t.Errorf("theoretical hit rate %v, want ≈0.97 like the recorded corpus", r)
	}
	if st.OSL.P50 < 100 || st.OSL.P50 > 500 || st.OSL.P99 < 4*st.OSL.P50 {
		t.Errorf("OSL %+v: want median 100–500 and a heavy tail", st.OSL)
	}
	if st.ISL.P50 < 20000 || st.ISL.P50 > 200000 || st.ISL.Min < 7000 {
		t.Errorf("ISL %+v", st.ISL)
	}
	if st.ThinkTime.P50 < 2 || st.ThinkTime.P50 > 30 || st.ThinkTime.P99 < 10*st.ThinkTime.P50 {
		t.Errorf("think time %+v: want median of seconds and a heavy tail", st.ThinkTime)
	}
	if st.SubagentEntries == 0 || st.SubagentRequests < st.SubagentEntries*2 {
		t.Errorf("subagents %d with %d requests", st.SubagentEntries, st.SubagentRequests)
	}
	var notMult64, compactions, sharedWithParent, turns int
	for i := range traces {
		tr := &traces[i]
		if tr.ToolTokens+tr.SystemTokens < 8000 || tr.ToolTokens+tr.SystemTokens > 24000 {
			t.Errorf("trace %s: tool+system tokens %d", tr.ID, tr.ToolTokens+tr.SystemTokens)
		}
		sys := (tr.ToolTokens + tr.SystemTokens) / 64
		for k := range tr.Requests {
			r := &tr.Requests[k]
			turns++
			if r.In%64 != 0 {
				notMult64++
			}
			if len(r.HashIDs) != r.In/64 {
				t.Fatalf("trace %s request %d: %d hash ids for in=%d", tr.ID, k, len(r.HashIDs), r.In)
			}
			if k > 0 {
				p := tr.Requests[k-1]
				if r.T < p.T+p.APITime {
					t.Fatalf("trace %s request %d starts before the previous one ends", tr.ID, k)
				}
				if lcp(p.HashIDs, r.HashIDs) == sys && len(p.HashIDs) > sys+100 {
					compactions++
				}
			}
		}
		for _, s := range tr.Subagents {
			if s.After > 0 && s.Requests[0].T < tr.Requests[s.After-1].T {
				t.Errorf("trace %s: subagent %s spawned before its anchor", tr.ID, s.AgentID)
			}
			if s.After < len(tr.Requests) && tr.Requests[s.After].T < s.T+s.DurationMs/1000 {
				t.Errorf("trace %s: parent resumes before subagent %s ends", tr.ID, s.AgentID)
			}
			if lcp(s.Requests[0].HashIDs, tr.Requests[0].HashIDs) > 0 {
				sharedWithParent++
			}
		}
	}
	if float64(notMult64) < 0.9*float64(turns) {
		t.Errorf("only %d of %d inputs are not a multiple of 64", notMult64, turns)
	}
	if compactions == 0 {
		t.Error("no compaction (prefix falling back to the system prefix) in 40 traces")
	}
	if sharedWithParent == 0 {
		t.Error("no subagent shares prefix blocks with its parent")
	}
}

func lcp(a, b []uint32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestSynthesizeMaxContext(t *testing.T) {
	t.Parallel()
	traces := Synthesize(SynthOptions{Seed: 1, Traces: 10, Subagents: true, MaxContext: 32768})
	for i := range traces {
		if p := traces[i].PeakContext(0); p > 32768 {
			t.Errorf("trace %s peak %d > 32768", traces[i].ID, p)
		}
	}
	if _, _, err := Select(traces, SelectOptions{MaxContextLength: 32768}); err != nil {
		t.Error(err)
	}
}

func BenchmarkSynthesize(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Synthesize(SynthOptions{Seed: 1, Subagents: true})
	}
}

func TestSynthesizeSmallContextKeepsPrefixesBuildable(t *testing.T) {
	for _, mc := range []int{4096, 16384} {
		for _, tr := range Synthesize(SynthOptions{Seed: 9, Traces: 10, Subagents: true, MaxContext: mc}) {
			sys := tr.ToolTokens + tr.SystemTokens
			if sys > mc/4 {
				t.Fatalf("MaxContext %d: trace %s system prefix %d tokens exceeds a quarter of the window", mc, tr.ID, sys)
			}
			for i, r := range tr.Requests {
				if r.In < sys || r.In+r.Out > mc {
					t.Fatalf("MaxContext %d: trace %s request %d in=%d out=%d (prefix %d)", mc, tr.ID, i, r.In, r.Out, sys)
				}
			}
		}
	}
}

// TestWriteJSONLFile: each extension reads back to the same traces, and
// a failed write leaves no file.
func TestWriteJSONLFile(t *testing.T) {
	t.Parallel()
	traces := Synthesize(SynthOptions{Seed: 6, Traces: 3, Subagents: true})
	dir := t.TempDir()
	for _, name := range []string{"a.jsonl", "a.jsonl.zst", "a.jsonl.gz"} {
		p := filepath.Join(dir, name)
		if err := WriteJSONLFile(p, traces); err != nil {
			t.Fatal(err)
		}
		c, err := Open(context.Background(), Source{InputFile: p}, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := c.Traces()
		c.Close()
		if len(got) != len(traces) || got[2].ID != traces[2].ID || len(got[2].Requests) != len(traces[2].Requests) {
			t.Errorf("%s read back %d traces", name, len(got))
		}
	}
	if err := WriteJSONLFile(filepath.Join(dir, "no", "such", "dir", "a.jsonl"), traces); err == nil {
		t.Error("a write into a missing folder succeeded")
	}
}
