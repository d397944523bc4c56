package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// TestLargeBodiesAreStreamedExactly: a message list above streamBodyAbove
// is written as it is rendered; the server receives exactly the bytes the
// one-buffer path builds (the same body, byte for byte), its length is the
// record's prompt bytes, and small bodies keep the one-buffer path.
func TestLargeBodiesAreStreamedExactly(t *testing.T) {
	srv := newFakeServer(t)
	// Long traces give bodies above the streaming threshold whatever turn
	// a lane starts at, short ones bodies below it: both kinds are sent
	// however slow the machine (a race build) makes the run.
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 7, Traces: 3, MinTurns: 30, MaxTurns: 40, TimeScale: 0.0005})
	for _, tr := range dataset.Synthesize(dataset.SynthOptions{Seed: 8, Traces: 3, MinTurns: 2, MaxTurns: 3, TimeScale: 0.0005}) {
		tr.ID = "short_" + tr.ID
		traces = append(traces, tr)
	}
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, traces, sink, ovf)
	cfg.Concurrency = len(traces)
	cfg.CacheBust = CacheBust{}
	cfg.BenchmarkDuration = 500 * time.Millisecond
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, res, srv, sink, ovf)
	// The expected bodies, built whole by a synthesizer of the same seed.
	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	convs := map[string]*prompttext.Conversation{}
	for i := range traces {
		c, err := syn.Conversation(&traces[i])
		if err != nil {
			t.Fatal(err)
		}
		convs[traces[i].ID] = c
	}
	var streamed, whole int
	for _, r := range sink.records() {
		srv.mu.Lock()
		got := srv.bodies[r.XRequestID]
		srv.mu.Unlock()
		want, err := convs[r.SourceTraceID].AppendMessagesJSONAt(nil, r.TurnIndex, "", prompttext.FirstUserPrefix)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(got, &body); err != nil {
			t.Fatalf("%s turn %d: the server got invalid JSON (%d bytes): %v", r.SourceTraceID, r.TurnIndex, len(got), err)
		}
		if !bytes.Equal(body.Messages, want) || len(got) != r.PromptBytes {
			t.Fatalf("%s turn %d: messages differ from the whole body's (%d vs %d bytes), or the body's %d bytes are not the record's %d",
				r.SourceTraceID, r.TurnIndex, len(body.Messages), len(want), len(got), r.PromptBytes)
		}
		if len(want) > streamBodyAbove {
			streamed++
		} else {
			whole++
		}
	}
	if streamed == 0 || whole == 0 {
		t.Fatalf("fixture: %d streamed and %d whole bodies; want both", streamed, whole)
	}
}

// TestStreamBodyWriteTo: a streamed body writes the bytes of the whole
// body, and its length is announced exactly.
func TestStreamBodyWriteTo(t *testing.T) {
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 7, Traces: 1, MinTurns: 40, MaxTurns: 40})
	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := syn.Conversation(&traces[0])
	if err != nil {
		t.Fatal(err)
	}
	c := (&Config{Streaming: true, CacheBust: presetMarkers}).normalize()
	sl := &slot{}
	k := conv.NumTurns() - 1
	if err := sl.buildBody(c, bodyParams{model: "m", maxTokens: 9}, conv, k, "[rid:abc]"); err != nil {
		t.Fatal(err)
	}
	sb := sl.streamBody()
	if sb == nil {
		t.Fatalf("fixture: turn %d is not streamed (%d bytes)", k, sl.bodyLen())
	}
	var viaWriteTo bytes.Buffer
	if _, err := sb.WriteTo(&viaWriteTo); err != nil {
		t.Fatal(err)
	}
	whole, _ := conv.AppendMessagesJSONAt(appendBodyHead(nil, bodyParams{model: "m", maxTokens: 9}), k, "[rid:abc]", prompttext.FirstUserPrefix)
	whole = appendBodyTail(whole, c, bodyParams{model: "m", maxTokens: 9})
	if !bytes.Equal(viaWriteTo.Bytes(), whole) || sb.Len() != len(whole) {
		t.Fatalf("WriteTo %d bytes, whole body %d, announced %d", viaWriteTo.Len(), len(whole), sb.Len())
	}
}
