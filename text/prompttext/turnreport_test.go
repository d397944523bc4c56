package prompttext

import (
	"strings"
	"testing"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// TestReportTurn: a turn's report re-encodes its messages to exactly the
// recorded input tokens, and its text says so and cuts long contents
// unless asked for all of them.
func TestReportTurn(t *testing.T) {
	t.Parallel()
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 3, Traces: 1, MinTurns: 30, MaxTurns: 31, TimeScale: 1, SubagentShare: dataset.DefaultSubagentShare})
	s, err := New(tokenizer.Builtin(), Options{Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := s.Conversation(&traces[0])
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.ReportTurn(traces[0].ID, conv, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Exact || rep.BuiltTokens != rep.RecordedIn || rep.RecordedIn != traces[0].Requests[2].In ||
		rep.RandomSeed != 42 || rep.Turn != 2 || rep.Turns != conv.NumTurns() || len(rep.Messages) < 2 || rep.Messages[0].Role != "system" {
		t.Fatalf("report %+v", rep)
	}
	short, full := rep.Text(false), rep.Text(true)
	if !strings.HasPrefix(short, "trace "+traces[0].ID+"  turn 2 of ") || !strings.Contains(short, "messages: exact\n") ||
		!strings.Contains(short, "--full shows all") || strings.Contains(full, "--full shows all") || len(full) <= len(short) {
		t.Errorf("text:\n%s", short)
	}
	if !strings.Contains(full, rep.Messages[0].Content) {
		t.Error("the full text lacks the system message")
	}
}
