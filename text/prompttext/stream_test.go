package prompttext

import (
	"bytes"
	"errors"
	"testing"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// TestWriteMessagesJSONAtMatchesAppend: the streamed message list is the
// appended one byte for byte, and MessagesJSONLenAt is its length, for
// every turn of conversations with tails, pull-backs, subagents and live
// replies (markers with characters that need escaping), in every marker
// placement, also through a writer that takes a few bytes at a time.
func TestWriteMessagesJSONAtMatchesAppend(t *testing.T) {
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 11, Traces: 6, Subagents: true, MinTurns: 10, MaxTurns: 40})
	markers := []string{"", "[rid:0123456789ab]", "quote\" back\\slash\nnewline\ttab\x01"}
	placements := []MarkerPlacement{FirstUserPrefix, FirstUserSuffix, SystemPrefix, SystemSuffix}
	for _, live := range []bool{false, true} {
		s := synthFor(t, tokenizer.Builtin(), 3, live)
		convs := []*Conversation{}
		for i := range traces {
			c, err := s.Conversation(&traces[i])
			if err != nil {
				t.Fatal(err)
			}
			convs = append(convs, c)
		}
		convs = append(convs, mustConv(t, s, goldenTrace()))
		turns := 0
		for ci, c := range convs {
			for k := 0; k < c.NumTurns(); k++ {
				if live && k%3 == 1 {
					c.SetLiveReply(k-1, "live \"reply\"\n"+string(rune('a'+k%26)))
				}
				for _, mk := range markers {
					for _, at := range placements {
						want, werr := c.AppendMessagesJSONAt(nil, k, mk, at)
						n, lerr := c.MessagesJSONLenAt(k, mk, at)
						var got bytes.Buffer
						wn, err := c.WriteMessagesJSONAt(&trickle{w: &got, max: 7 + k%5}, k, mk, at)
						if (werr != nil) != (err != nil) || (werr != nil) != (lerr != nil) {
							t.Fatalf("conv %d turn %d: errors differ: append %v, write %v, len %v", ci, k, werr, err, lerr)
						}
						if werr != nil {
							continue
						}
						turns++
						if !bytes.Equal(got.Bytes(), want) || int(wn) != len(want) || n != len(want) {
							t.Fatalf("conv %d turn %d marker %q at %d (live %v): wrote %d bytes (returned %d, length %d), append gave %d; equal %v",
								ci, k, mk, at, live, got.Len(), wn, n, len(want), bytes.Equal(got.Bytes(), want))
						}
					}
				}
			}
		}
		if turns < 100 {
			t.Fatalf("only %d turns compared", turns)
		}
	}
}

// TestWriteMessagesJSONAtWriteError: a failing writer's error is returned.
func TestWriteMessagesJSONAtWriteError(t *testing.T) {
	s := testSynth(t)
	c := mustConv(t, s, goldenTrace())
	boom := errors.New("broken pipe")
	if _, err := c.WriteMessagesJSONAt(errWriter{boom}, 3, "", FirstUserPrefix); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the writer's", err)
	}
}

func mustConv(t *testing.T, s *Synthesizer, tr *dataset.Trace) *Conversation {
	t.Helper()
	c, err := s.Conversation(tr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// trickle hands w at most max bytes at a time.
type trickle struct {
	w   *bytes.Buffer
	max int
}

func (t *trickle) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		n := min(len(p), t.max)
		t.w.Write(p[:n])
		p = p[n:]
	}
	return total, nil
}

type errWriter struct{ err error }

func (e errWriter) Write(p []byte) (int, error) { return 0, e.err }
