package timing_test

import (
	"math"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/plan"
	. "github.com/agentperf/agentperf/timing"
)

// fuzzTrace decodes b into a trace of at most 16 top-level requests and
// one subagent entry (4 bytes a request: start step, api time, model,
// hash list), sharing prefixes often.
func fuzzTrace(b []byte) dataset.Trace {
	tr := dataset.Trace{ID: "Z"}
	t := 0.0
	var reqs []dataset.Request
	for len(b) >= 4 && len(reqs) < 20 {
		dt, api, model, h := b[0], b[1], b[2], b[3]
		b = b[4:]
		t += float64(dt%8) / 4
		r := dataset.Request{T: t, APITime: float64(api%16) / 4, Model: string(rune('A' + model%2)), In: 100, Out: 10,
			ThinkTime: math.NaN(), TTFT: math.NaN()}
		for k := 0; k < int(h%5); k++ {
			r.HashIDs = append(r.HashIDs, uint32((int(h)>>k)%2+k*2))
		}
		reqs = append(reqs, r)
	}
	cut := len(reqs) * 3 / 4
	tr.Requests = reqs[:cut]
	if cut < len(reqs) {
		tr.Subagents = []dataset.Subagent{{After: cut / 2, T: reqs[cut].T, AgentID: "w", DurationMs: math.NaN(), Requests: reqs[cut:]}}
	}
	return tr
}

// FuzzBuildPlanV10: every request of a trace is in exactly one stream of
// its v1.0 plan (or counted dropped), and a lane plays the plan to the
// end without stalling.
func FuzzBuildPlanV10(f *testing.F) {
	f.Add([]byte{0, 4, 0, 9, 1, 4, 0, 19, 1, 30, 1, 27, 4, 4, 0, 3, 2, 2, 1, 4, 1, 3, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := fuzzTrace(b)
		p := plan.Build([]dataset.Trace{tr}, plan.Options{PlanOptions: PlanOptions{Generation: V10}})[0]
		top := make([]int, len(tr.Requests))
		inner := 0
		for i := range p.Streams {
			st := &p.Streams[i]
			if st.Kind == SourceSubagent {
				inner += len(st.Turns)
				continue
			}
			for _, tn := range st.Turns {
				top[tn.Inner]++
			}
		}
		for i, n := range top {
			if n != 1 {
				t.Fatalf("top-level request %d is in %d streams", i, n)
			}
		}
		if want := tr.NumSubagentRequests() - p.DroppedRequests; inner != want {
			t.Fatalf("%d subagent requests in streams, want %d", inner, want)
		}
		if !Usable(p) {
			return
		}
		// From t* at the first start the lane plays the whole tree, then
		// recycles: a barrier or join that never opens would stop it short.
		sc, err := New(Config{Generation: V10, Lanes: 1, Duration: 20 * time.Minute}, []*Plan{p})
		if err != nil {
			t.Fatal(err)
		}
		log, _ := Drive(t, sc, T0, ConstServer(time.Second))
		if len(log) < p.Requests() {
			t.Fatalf("%d sends, fewer than the plan's %d requests: the tree stalled\n%s", len(log), p.Requests(), DescribePlan(p))
		}
	})
}
