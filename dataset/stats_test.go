package dataset

import (
	"errors"
	"math"
	"sort"
	"strings"
	"testing"
)

// contractExample is the invented example record of docs/weka-traces.md,
// whose hit counts that page works out for each definition.
const contractExample = `{"id": "demo-0001", "models": ["claude-opus-4-5-20251101", "claude-haiku-4-5-20251001"],
 "block_size": 64, "hash_id_scope": "local", "tool_tokens": 0, "system_tokens": 0,
 "requests": [
  {"t": 0.0,  "type": "s", "model": "claude-opus-4-5-20251101", "in": 192, "out": 48,
   "hash_ids": [0, 1, 2], "input_types": ["text"], "output_types": ["text", "tool_use"],
   "stop": "tool_use", "api_time": 2.4, "think_time": 0.0, "ttft": 0.8},
  {"t": 6.5,  "type": "n", "model": "claude-opus-4-5-20251101", "in": 320, "out": 32,
   "hash_ids": [0, 1, 2, 3, 4], "input_types": ["tool_result"], "output_types": ["text", "tool_use"],
   "stop": "tool_use", "api_time": 1.9, "think_time": 4.1},
  {"t": 9.0,  "type": "subagent", "agent_id": "agent_001", "subagent_type": "Explore",
   "duration_ms": 3500, "total_tokens": 152, "tool_use_count": 1, "status": "completed",
   "models": ["claude-haiku-4-5-20251001"], "tool_tokens": 0, "system_tokens": 0,
   "requests": [
     {"t": 9.0, "type": "n", "model": "claude-haiku-4-5-20251001", "in": 128, "out": 24,
      "hash_ids": [0, 5], "input_types": ["text"], "output_types": ["text"], "stop": "end_turn",
      "api_time": 3.5, "think_time": 0.6}]},
  {"t": 15.0, "type": "n", "model": "claude-opus-4-5-20251101", "in": 448, "out": 64,
   "hash_ids": [0, 1, 2, 3, 4, 6, 7], "input_types": ["tool_result"], "output_types": ["text"],
   "stop": "end_turn", "api_time": 3.0, "think_time": 2.5}]}`

func contractTrace(t *testing.T) Trace {
	t.Helper()
	tr, err := ReadTraceJSON([]byte(contractExample), "example.json")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestPrefixHitsContractExample(t *testing.T) {
	t.Parallel()
	tr := contractTrace(t)
	parent, sub := TracePrefixHits(&tr)
	wantParent := []HitCount{{0, 3}, {3, 5}, {5, 7}}
	wantSub := []HitCount{{1, 2}}
	for i := range wantParent {
		if parent[i] != wantParent[i] {
			t.Errorf("parent request %d: %+v, want %+v", i, parent[i], wantParent[i])
		}
	}
	if len(sub) != 1 || sub[0] != wantSub[0] {
		t.Errorf("subagent hits %+v, want %+v", sub, wantSub)
	}
	if got := PrefixHits(&tr); len(got) != 3 || got[2] != wantParent[2] {
		t.Errorf("PrefixHits = %+v", got)
	}
	st := ComputeStats([]Trace{tr})
	if h := st.TheoreticalHitRate; h.Hits != 9 || h.Total != 17 || h.Definition != HitDefinitionC {
		t.Errorf("theoretical hit rate %+v, want 9/17 with definition C", h)
	}
}

func TestPrefixHitsTimeOrderAndDuplicates(t *testing.T) {
	t.Parallel()
	// The subagent runs (t=1) before parent request 1 (t=5) although the
	// entry comes after it in the file: time order decides. Duplicate ids
	// count in the total.
	line := traceLine("x", `{"t":0,"type":"n","in":64,"out":1,"hash_ids":[1]},`+
		`{"t":5,"type":"n","in":64,"out":1,"hash_ids":[1,2,3,3]},`+
		`{"t":1,"type":"subagent","requests":[{"t":1,"type":"n","in":64,"out":1,"hash_ids":[1,2]}]}`)
	tr := readOne(t, line)
	parent, sub := TracePrefixHits(&tr)
	if parent[0] != (HitCount{0, 1}) || sub[0] != (HitCount{1, 2}) || parent[1] != (HitCount{2, 4}) {
		t.Errorf("parent %+v sub %+v; want [0/1 2/4] [1/2]", parent, sub)
	}
}

func TestPercentileNumpyLinear(t *testing.T) {
	t.Parallel()
	xs := []float64{1, 2, 3, 4}
	for _, c := range []struct{ p, want float64 }{{0, 1}, {50, 2.5}, {90, 3.7}, {100, 4}} {
		if got := Percentile(xs, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("empty percentile is not NaN")
	}
	s := Summarize([]float64{4, 1, 3, 2})
	if s.Count != 4 || s.Min != 1 || s.Max != 4 || s.Mean != 2.5 || s.P50 != 2.5 {
		t.Errorf("Summarize = %+v", s)
	}
}

func TestComputeStatsCounts(t *testing.T) {
	t.Parallel()
	tr := contractTrace(t)
	big := readOne(t, traceLine("big", `{"t":0,"type":"n","in":300000,"out":10,"hash_ids":[1]}`))
	st := ComputeStats([]Trace{tr, big})
	if st.Traces != 2 || st.ParentRequests != 4 || st.SubagentEntries != 1 || st.SubagentRequests != 1 || st.TracesWithSubagents != 1 {
		t.Errorf("counts %+v", st)
	}
	if st.HashIDs != 18 || st.UniqueHashIDs != 9 {
		t.Errorf("hash ids %d unique %d, want 18 and 9", st.HashIDs, st.UniqueHashIDs)
	}
	over := map[int]int{}
	for _, w := range st.TracesOver {
		over[w.Window] = w.Traces
	}
	if over[131072] != 1 || over[262144] != 1 || over[1048576] != 0 {
		t.Errorf("traces over windows %v", st.TracesOver)
	}
	total := 0
	for _, b := range st.ContextHistogram {
		total += b.Count
	}
	if total != 5 || st.ContextHistogram[0].Count != 4 || st.ContextHistogram[6].Count != 1 {
		t.Errorf("histogram %+v (want 4 requests ≤ 8k and 1 in (256k, 512k])", st.ContextHistogram)
	}
	if st.ThinkTime.Count != 3 || st.TTFT.Count != 1 || st.TraceDuration.Max != 18 {
		t.Errorf("think %+v ttft %+v duration %+v", st.ThinkTime, st.TTFT, st.TraceDuration)
	}
	if len(st.Models) != 3 || st.Models[0].Model != "claude-opus-4-5-20251101" || st.Models[0].Requests != 3 {
		t.Errorf("models %+v", st.Models)
	}
	if !strings.HasPrefix(st.TheoreticalHitRate.Definition, "C:") {
		t.Errorf("definition %q", st.TheoreticalHitRate.Definition)
	}
}

func TestComputeStatsEmpty(t *testing.T) {
	t.Parallel()
	st := ComputeStats(nil)
	if st.Traces != 0 || st.TheoreticalHitRate.Rate != 0 || st.ISL.Count != 0 {
		t.Errorf("empty stats %+v", st)
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	mk := func(id string, in, out int) Trace {
		return Trace{ID: id, Requests: []Request{{In: in, Out: out}}}
	}
	traces := []Trace{mk("a", 1000, 10), mk("b", 200000, 100), mk("c", 5000, 50000), mk("d", 2000, 1)}
	for _, tc := range []struct {
		name string
		opt  SelectOptions
		ids  string
		st   SelectStats
		err  string
	}{
		{"all", SelectOptions{}, "a,b,c,d", SelectStats{4, 4, 4, 0}, ""},
		{"ceiling", SelectOptions{NumEntries: 2}, "a,b", SelectStats{4, 4, 2, 0}, ""},
		{"ceiling above size", SelectOptions{NumEntries: 393}, "a,b,c,d", SelectStats{4, 4, 4, 0}, ""},
		{"context filter", SelectOptions{MaxContextLength: 10000}, "a,d", SelectStats{4, 2, 2, 2}, ""},
		{"filter then cap", SelectOptions{MaxContextLength: 10000, NumEntries: 1}, "a", SelectStats{4, 2, 1, 2}, ""},
		{"osl cap applies to peak", SelectOptions{MaxContextLength: 10000, MaxOSL: 1000}, "a,c,d", SelectStats{4, 3, 3, 1}, ""},
		{"nothing left", SelectOptions{MaxContextLength: 100}, "", SelectStats{}, "drops all 4 traces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, st, err := Select(traces, tc.opt)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, x := range got {
				ids = append(ids, x.ID)
			}
			if strings.Join(ids, ",") != tc.ids || st != tc.st {
				t.Errorf("got %v %+v, want %s %+v", ids, st, tc.ids, tc.st)
			}
		})
	}
	if _, _, err := Select(nil, SelectOptions{}); err == nil {
		t.Error("empty corpus selected without error")
	}
	// A limit that drops everything, or a negative one, names its field
	// (the CLI names its flag instead).
	for opt, field := range map[SelectOptions]string{
		{MaxContextLength: 100}: "SelectOptions.MaxContextLength",
		{MaxContextLength: -1}:  "SelectOptions.MaxContextLength",
		{MaxOSL: -1}:            "SelectOptions.MaxOSL",
		{NumEntries: -2}:        "SelectOptions.NumEntries",
	} {
		_, _, err := Select(traces, opt)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("Select(%+v) = %v, want a *FieldError for %s", opt, err, field)
		}
	}
}

// BenchmarkComputeStatsReal computes the dataset info statistics of the
// 200-trace corpus (28M hash ids).
func BenchmarkComputeStatsReal(b *testing.B) {
	traces, _, err := ReadPath(readTestSharedDir(b, "traces/kvct-200.jsonl.zst"), ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ComputeStats(traces)
	}
}

// TestPrefixHitsMatchesNaive compares TracePrefixHits with a direct
// map-based reading of definition C on synthetic traces with subagents
// (whose request times are all distinct, so time order alone decides).
func TestPrefixHitsMatchesNaive(t *testing.T) {
	t.Parallel()
	for _, tr := range Synthesize(SynthOptions{Seed: 11, Traces: 12, Subagents: true}) {
		type item struct {
			t   float64
			ids []uint32
			h   *HitCount
		}
		parent, sub := TracePrefixHits(&tr)
		var items []item
		want := make([]HitCount, len(parent)+len(sub))
		for i, r := range tr.Requests {
			items = append(items, item{r.T, r.HashIDs, &want[i]})
		}
		k := len(parent)
		var walk func([]Subagent)
		walk = func(ss []Subagent) {
			for _, s := range ss {
				for _, r := range s.Requests {
					items = append(items, item{r.T, r.HashIDs, &want[k]})
					k++
				}
				walk(s.Subagents)
			}
		}
		walk(tr.Subagents)
		sort.Slice(items, func(a, b int) bool { return items[a].t < items[b].t })
		seen := map[uint32]bool{}
		for _, it := range items {
			hit := 0
			for hit < len(it.ids) && seen[it.ids[hit]] {
				hit++
			}
			*it.h = HitCount{hit, len(it.ids)}
			for _, id := range it.ids {
				seen[id] = true
			}
		}
		got := append(parent, sub...)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("trace %s request %d: %+v, naive %+v", tr.ID, i, got[i], want[i])
			}
		}
	}
}
