package prompttext

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// shape renders turn k's segment list as "s[0,2) u[2,5)+10 a[5,7)".
func shape(t *testing.T, c *Conversation, k int) string {
	t.Helper()
	chain, err := c.segments(k)
	if err != nil {
		return "error: " + err.Error()
	}
	var parts []string
	for _, ni := range chain {
		n := c.nodes[ni]
		s := fmt.Sprintf("%c[%d,%d)", roleNames[n.role][0], n.start, n.end())
		if n.tail > 0 {
			s += fmt.Sprintf("+%d", n.tail)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func testSynth(t *testing.T) *Synthesizer {
	t.Helper()
	return synthFor(t, tokenizer.Builtin(), 0, false)
}

// TestReconstruction covers the rules of docs/prompt-synthesis.md: turn 0,
// every truncation case, the context-loss and trailing-user rules, the
// planner's caps, the equal-context retry and the relabel safety net.
func TestReconstruction(t *testing.T) {
	const B = 64
	cases := []struct {
		name       string
		tool, sys  int
		reqs       []dataset.Request
		want       []string // shape per turn
		check      func(t *testing.T, c *Conversation)
		wantErrSub string
	}{
		{
			name: "turn0 system from tool+system, user rest and tail",
			tool: 100, sys: 20,
			reqs: []dataset.Request{req(5*B+10, 0, seq(1, 5)...)},
			want: []string{"s[0,2) u[2,5)+10"},
		},
		{
			name: "turn0 without system",
			reqs: []dataset.Request{req(3*B+1, 0, seq(1, 3)...)},
			want: []string{"u[0,3)+1"},
		},
		{
			name: "turn0 truncated hash ids synthesize the missing blocks in the tail",
			tool: 64,
			reqs: []dataset.Request{req(6*B+7, 0, seq(1, 3)...)},
			want: []string{"s[0,1) u[1,3)+199"},
		},
		{
			name: "turn0 tail only",
			reqs: []dataset.Request{req(40, 0)},
			want: []string{"u[0,0)+40"},
		},
		{
			name:       "system prefix longer than the hash ids is a hard error",
			tool:       1000,
			reqs:       []dataset.Request{req(20*B, 0, seq(1, 3)...)},
			wantErrSub: "system prefix would be fake",
		},
		{
			name: "extension: boundary cut strips the overhang, assistant = ceil(out/64)",
			tool: 100, sys: 20,
			reqs: []dataset.Request{req(5*B+10, 100, seq(1, 5)...), req(9*B, 0, seq(1, 9)...)},
			want: []string{"s[0,2) u[2,5)+10", "s[0,2) u[2,5) a[5,7) u[7,9)"},
			check: func(t *testing.T, c *Conversation) {
				if i := c.Info(1); !i.Reset || i.AssistantBlocks != 2 || i.Kept != 5 {
					t.Errorf("info = %+v; want reset (overhang stripped), 2 assistant blocks, 5 kept", i)
				}
			},
		},
		{
			name: "boundary cut without overhang disturbs nothing",
			reqs: []dataset.Request{req(5*B, 64, seq(1, 5)...), req(8*B, 0, seq(1, 8)...)},
			want: []string{"u[0,5)", "u[0,5) a[5,6) u[6,8)"},
			check: func(t *testing.T, c *Conversation) {
				if c.Info(1).Reset {
					t.Error("pure extension must not be a reset")
				}
			},
		},
		{
			name: "trailing-user rule hands the last new block to the user",
			reqs: []dataset.Request{req(5*B, 128, seq(1, 5)...), req(7*B, 0, seq(1, 7)...)},
			want: []string{"u[0,5)", "u[0,5) a[5,6) u[6,7)"},
		},
		{
			name: "no trailing-user relabel when a tail follows",
			reqs: []dataset.Request{req(5*B, 128, seq(1, 5)...), req(7*B+3, 0, seq(1, 7)...)},
			want: []string{"u[0,5)", "u[0,5) a[5,7) u[7,7)+3"},
		},
		{
			name: "tool_result input types tag the new user segment",
			reqs: []dataset.Request{req(2*64, 64, seq(1, 2)...),
				{In: 5 * 64, HashIDs: seq(1, 5), InputTypes: []string{"tool_result"}}},
			want: []string{"u[0,2)", "u[0,2) a[2,3) u[3,5)"},
			check: func(t *testing.T, c *Conversation) {
				m, _ := c.Messages(1)
				if m[0].ToolResult || m[1].ToolResult || !m[2].ToolResult {
					t.Errorf("tool-result tags = %v %v %v; want only the new user message", m[0].ToolResult, m[1].ToolResult, m[2].ToolResult)
				}
			},
		},
		{
			name: "out 0 gives no assistant",
			reqs: []dataset.Request{req(2*B, 0, seq(1, 2)...), req(4*B, 0, seq(1, 4)...)},
			want: []string{"u[0,2)", "u[0,2) u[2,4)"},
		},
		{
			name: "boundary cut at the end of an earlier segment deletes the later ones",
			tool: 100, sys: 20,
			reqs: []dataset.Request{
				req(5*B+10, 100, seq(1, 5)...),
				req(9*B, 50, seq(1, 9)...),
				req(9*B, 0, cat(seq(1, 7), []uint32{20, 21})...),
			},
			want: []string{"s[0,2) u[2,5)+10", "s[0,2) u[2,5) a[5,7) u[7,9)", "s[0,2) u[2,5) a[5,7) a[7,8) u[8,9)"},
			check: func(t *testing.T, c *Conversation) {
				if !c.Info(2).Reset {
					t.Error("deleting a sent segment must be a reset")
				}
			},
		},
		{
			name: "mid-segment cut slices the segment at a block boundary",
			tool: 100, sys: 20,
			reqs: []dataset.Request{
				req(5*B+10, 100, seq(1, 5)...),
				req(7*B+5, 64, cat(seq(1, 3), seq(30, 33))...),
			},
			want: []string{"s[0,2) u[2,5)+10", "s[0,2) u[2,3) a[3,5) u[5,7)+5"},
		},
		{
			name: "lcp 0 clears everything and the context-loss rule gives no assistant",
			tool: 64,
			reqs: []dataset.Request{req(3*B, 500, seq(1, 3)...), req(4*B+2, 0, seq(50, 53)...)},
			want: []string{"s[0,1) u[1,3)", "u[0,4)+2"},
		},
		{
			name: "cut at the start of the user segment keeps only the system: context loss",
			tool: 128,
			reqs: []dataset.Request{req(5*B, 500, seq(1, 5)...), req(6*B, 0, cat(seq(1, 2), seq(60, 63))...)},
			want: []string{"s[0,2) u[2,5)", "s[0,2) u[2,6)"},
		},
		{
			name: "partial hashed last block is not a full block",
			reqs: []dataset.Request{req(3*B+10, 64, seq(1, 4)...), req(5*B, 0, seq(1, 5)...)},
			want: []string{"u[0,3)+10", "u[0,3) a[3,4) u[4,5)"},
		},
		{
			name: "lcp beyond the blocks the turn covers is clamped",
			reqs: []dataset.Request{req(5*B, 0, seq(1, 5)...), req(3*B+4, 0, seq(1, 5)...)},
			want: []string{"u[0,5)", "u[0,3) u[3,3)+4"},
		},
		{
			name: "planner caps the creating turn so a degenerate pull-back ends with user",
			reqs: []dataset.Request{
				req(3*B, 1000, seq(1, 3)...),
				req(8*B, 0, seq(1, 8)...),
				req(5*B, 0, seq(1, 5)...),
			},
			want: []string{"u[0,3)", "u[0,3) a[3,4) u[4,8)", "u[0,3) a[3,4) u[4,5)"},
			check: func(t *testing.T, c *Conversation) {
				if i := c.Info(1); i.Cap != 1 || i.AssistantBlocks != 1 {
					t.Errorf("turn 1 info = %+v; want cap 1 and 1 assistant block", i)
				}
				if c.Info(2).Relabeled {
					t.Error("the planner should make the safety net unnecessary")
				}
			},
		},
		{
			name: "equal-context retry resends the full list",
			reqs: []dataset.Request{
				req(3*B, 100, seq(1, 3)...),
				req(6*B, 0, seq(1, 6)...),
				req(6*B, 0, seq(1, 6)...),
			},
			want: []string{"u[0,3)", "u[0,3) a[3,5) u[5,6)", "u[0,3) a[3,5) u[5,6)"},
			check: func(t *testing.T, c *Conversation) {
				if !c.Info(2).Reset {
					t.Error("equal-context retry must be stored as a reset")
				}
			},
		},
		{
			name: "pull-back into the system prompt hands the last block to a user message",
			tool: 4 * 64,
			reqs: []dataset.Request{req(6*B, 0, seq(1, 6)...), req(3*B, 0, seq(1, 3)...)},
			want: []string{"s[0,4) u[4,6)", "s[0,2) u[2,3)"},
			check: func(t *testing.T, c *Conversation) {
				if !c.Info(1).Relabeled {
					t.Error("want Relabeled")
				}
			},
		},
		{
			name: "turn 0 that is all system gives its last block to the user",
			tool: 3 * 64,
			reqs: []dataset.Request{req(3*B, 0, seq(1, 3)...)},
			want: []string{"s[0,2) u[2,3)"},
		},
	}
	s := testSynth(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := &dataset.Trace{ID: "t-" + tc.name, BlockSize: 64, ToolTokens: tc.tool, SystemTokens: tc.sys, Requests: tc.reqs}
			c, err := s.Conversation(tr)
			if tc.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
					t.Fatalf("err = %v; want it to mention %q", err, tc.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got := shape(t, c, k); got != want {
					t.Errorf("turn %d = %s; want %s", k, got, want)
				}
			}
			checkTurnInvariants(t, c, tr)
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// checkTurnInvariants asserts what every sent turn must satisfy: it ends
// with a user message, no content is empty, the tokens sum to in and the
// contents re-encode to their token counts.
func checkTurnInvariants(t *testing.T, c *Conversation, tr *dataset.Trace) {
	t.Helper()
	tok := c.s.Tokenizer()
	for k := 0; k < c.NumTurns(); k++ {
		msgs, err := c.Messages(k)
		if err != nil {
			t.Fatalf("turn %d: %v", k, err)
		}
		if msgs[len(msgs)-1].Role != RoleUser {
			t.Errorf("turn %d ends with %s", k, msgs[len(msgs)-1].Role)
		}
		sum := 0
		for i, m := range msgs {
			if m.Content == "" {
				t.Errorf("turn %d message %d (%s) is empty", k, i, m.Role)
			}
			if n := tokenizer.Count(tok, m.Content); n != m.Tokens {
				t.Errorf("turn %d message %d encodes to %d tokens, want %d", k, i, n, m.Tokens)
			}
			sum += m.Tokens
		}
		if sum != tr.Requests[k].In {
			t.Errorf("turn %d: %d tokens, recorded in=%d", k, sum, tr.Requests[k].In)
		}
	}
}

// TestRealTraceInvariants checks the structural rules on every turn of the
// real sample (ends with a user message, no empty content, no safety-net
// relabel needed, every full block sends the recorded hash id, and the
// first lcp blocks are the previous turn's blocks in the same roles) and,
// on a sample of turns (every pull-back and every 10th turn up to 64k
// tokens), that the kept prefix is sent as the same bytes in messages of
// the same roles as in the previous turn.
func TestRealTraceInvariants(t *testing.T) {
	skipUnderRace(t)
	traces := realTraces(t)
	if testing.Short() {
		traces = traces[:20]
	}
	s := testSynth(t)
	relabeled, turns, byteChecked := 0, 0, 0
	type blockRole struct {
		id   uint32
		role role
	}
	var prevBlocks, curBlocks []blockRole
	for i := range traces {
		tr := &traces[i]
		c, err := s.Conversation(tr)
		if err != nil {
			t.Fatalf("%s: %v", tr.ID, err)
		}
		prevBlocks = prevBlocks[:0]
		for k := 0; k < c.NumTurns(); k++ {
			turns++
			chain, err := c.segments(k)
			if err != nil {
				t.Fatalf("%s turn %d: %v", tr.ID, k, err)
			}
			// Every turn: the kept blocks are the same hash ids in the same
			// roles as in the previous turn (block text is a pure function
			// of the hash id, so the bytes are identical), and they are the
			// hash ids this turn recorded.
			curBlocks = curBlocks[:0]
			for _, ni := range chain {
				n := &c.nodes[ni]
				for b := n.start; b < n.end(); b++ {
					curBlocks = append(curBlocks, blockRole{c.reqs[n.src].HashIDs[b], n.role})
				}
			}
			if k > 0 {
				kept := c.Info(k).Kept
				for b := 0; b < kept; b++ {
					if curBlocks[b] != prevBlocks[b] || curBlocks[b].id != tr.Requests[k].HashIDs[b] {
						t.Fatalf("%s turn %d: kept block %d is %+v, previous turn sent %+v, recorded id %d",
							tr.ID, k, b, curBlocks[b], prevBlocks[b], tr.Requests[k].HashIDs[b])
					}
				}
			}
			for b := range curBlocks {
				if b < len(tr.Requests[k].HashIDs) && curBlocks[b].id != tr.Requests[k].HashIDs[b] {
					t.Fatalf("%s turn %d: block %d sends hash id %d, recorded %d", tr.ID, k, b, curBlocks[b].id, tr.Requests[k].HashIDs[b])
				}
			}
			prevBlocks, curBlocks = curBlocks, prevBlocks
			if r := c.nodes[chain[len(chain)-1]].role; r != roleUser {
				t.Fatalf("%s turn %d ends with %s", tr.ID, k, roleNames[r])
			}
			for j, ni := range chain {
				if c.nodes[ni].tokens() == 0 {
					t.Fatalf("%s turn %d message %d is empty", tr.ID, k, j)
				}
			}
			if c.Info(k).Relabeled {
				relabeled++
			}
			info := c.Info(k)
			if k > 0 && tr.Requests[k].In <= 64<<10 && (info.Kept < c.Info(k-1).NewBlocks+c.Info(k-1).Kept || k%10 == 0) {
				byteChecked++
				prev, err1 := c.Messages(k - 1)
				cur, err2 := c.Messages(k)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				checkKeptPrefix(t, c, tr, k, info.Kept, prev, cur)
			}
		}
	}
	if relabeled > 0 {
		t.Errorf("%d of %d turns needed the relabel safety net; the planner should prevent it on real traces", relabeled, turns)
	}
	t.Logf("%d turns, %d byte-checked prefixes", turns, byteChecked)
}

// checkKeptPrefix asserts that the first kept*64 tokens of turn k are sent
// as the same bytes, in messages of the same roles, as in turn k-1.
func checkKeptPrefix(t *testing.T, c *Conversation, tr *dataset.Trace, k, kept int, prev, cur []Message) {
	t.Helper()
	blockBytes := 0
	for b := 0; b < kept; b++ {
		blockBytes += c.s.c.textLen(c.block(tr.Requests[k].HashIDs[b]))
	}
	flat := func(ms []Message) (string, string) {
		var text, roles strings.Builder
		for _, m := range ms {
			text.WriteString(m.Content)
			roles.WriteString(strings.Repeat(m.Role[:1], len(m.Content)))
		}
		return text.String(), roles.String()
	}
	pt, pr := flat(prev)
	ct, cr := flat(cur)
	if len(pt) < blockBytes || len(ct) < blockBytes || pt[:blockBytes] != ct[:blockBytes] || pr[:blockBytes] != cr[:blockBytes] {
		t.Fatalf("%s turn %d: the first %d kept blocks (%d bytes) differ from turn %d", tr.ID, k, kept, blockBytes, k-1)
	}
}
