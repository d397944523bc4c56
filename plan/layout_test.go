package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/timing"
)

// TestLayoutsCoverEveryRequest: under each generation, the sessions of a
// trace's layout hold each top-level request once (the root and the flat
// chains by position, each subagent entry by its position), and the table
// counts every trace.
func TestLayoutsCoverEveryRequest(t *testing.T) {
	t.Parallel()
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 4, Traces: 8, Subagents: true, MinTurns: 30, MaxTurns: 50, TimeScale: 1, SubagentShare: dataset.DefaultSubagentShare})
	for _, name := range timing.GenerationNames() {
		g, err := timing.LookupGeneration(name)
		if err != nil {
			t.Fatal(err)
		}
		var rows []Layout
		tot, err := Layouts(traces, Options{PlanOptions: timing.PlanOptions{Generation: g}}, func(l *Layout) error {
			rows = append(rows, *l)
			return nil
		})
		if err != nil || len(rows) != len(traces) {
			t.Fatalf("%s: %d rows, %v", name, len(rows), err)
		}
		for i, r := range rows {
			if r.TraceID != traces[i].ID || r.Sessions[0].Kind != "root" || r.Sessions[0].SpawnTurn != nil {
				t.Errorf("%s: row %d: %+v", name, i, r.Sessions[0])
			}
			seen := map[int]int{}
			for _, s := range r.Sessions {
				if s.Kind == "subagent" {
					if len(s.OuterIndices) != 1 || len(s.InnerIndices) == 0 || s.SpawnTurn == nil {
						t.Errorf("%s: %s: subagent session %+v", name, r.TraceID, s)
					}
					continue
				}
				for _, o := range s.OuterIndices {
					seen[o]++
				}
			}
			for o, n := range seen {
				if n != 1 {
					t.Errorf("%s: %s: request %d in %d sessions", name, r.TraceID, o, n)
				}
			}
		}
		var b strings.Builder
		if err := WriteTable(&b, g.Name, rows, tot); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.HasPrefix(out, "trace ") || strings.Count(out, "\nsynth_") != len(traces) ||
			!strings.Contains(out, "AgentX "+g.Name+" session layout of 8 traces:\n") {
			t.Errorf("%s: table:\n%s", name, out)
		}
	}
}

func TestLayoutsStopsAtAnError(t *testing.T) {
	t.Parallel()
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 4, Traces: 3, MinTurns: 30, MaxTurns: 31, TimeScale: 1, SubagentShare: dataset.DefaultSubagentShare})
	g, _ := timing.LookupGeneration(timing.DefaultGeneration)
	stop := errors.New("stop")
	n := 0
	_, err := Layouts(traces, Options{PlanOptions: timing.PlanOptions{Generation: g}}, func(*Layout) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("err %v after %d calls", err, n)
	}
}

func TestLabelFamily(t *testing.T) {
	t.Parallel()
	for label, want := range map[string]string{"aux:red:001": "aux:red", "aux:002": "aux", "wg:1": "wg", "fa:000": "fa", "other": "other"} {
		if got := labelFamily(label); got != want {
			t.Errorf("labelFamily(%q) = %q, want %q", label, got, want)
		}
	}
}
