package prompttext

import (
	"fmt"
	"strings"

	"github.com/agentperf/agentperf/text/tokenizer"
)

// TurnReport is what one turn of a conversation sends: its messages, each
// re-encoded to count its tokens, beside the recorded counts and how the
// turn was reconstructed (`agentperf dataset show`, as JSON or Text).
type TurnReport struct {
	Trace                string               `json:"trace"`
	Turn                 int                  `json:"turn"`
	Turns                int                  `json:"turns"`
	RecordedIn           int                  `json:"recorded_in"`
	RecordedOut          int                  `json:"recorded_out"`
	BuiltTokens          int                  `json:"built_tokens"`
	Exact                bool                 `json:"exact"`
	Tokenizer            string               `json:"tokenizer"`
	TokenizerApproximate bool                 `json:"tokenizer_approximate"`
	RandomSeed           int64                `json:"random_seed"`
	Live                 bool                 `json:"live_assistant_responses"`
	Reconstruction       ReportReconstruction `json:"reconstruction"`
	Messages             []ReportMessage      `json:"messages"`
}

// ReportReconstruction is a TurnReport's TurnInfo.
type ReportReconstruction struct {
	LCPBlocks       int  `json:"lcp_blocks"`
	KeptBlocks      int  `json:"kept_blocks"`
	NewBlocks       int  `json:"new_blocks"`
	TailTokens      int  `json:"tail_tokens"`
	AssistantBlocks int  `json:"assistant_blocks"`
	AssistantCap    *int `json:"assistant_cap,omitempty"`
	ResetContext    bool `json:"reset_context"`
	Relabeled       bool `json:"relabeled_last_block"`
}

// ReportMessage is one message of a TurnReport.
type ReportMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Tokens is the re-encoded token count of Content; Expected is what
	// the synthesizer built it for.
	Tokens      int  `json:"tokens"`
	Expected    int  `json:"expected_tokens"`
	LiveReplyTo *int `json:"live_reply_to,omitempty"`
	ToolResult  bool `json:"tool_result,omitempty"`
}

// ReportTurn builds the report of turn k of conv, a conversation of s
// for the trace traceID: its messages re-encoded with s's tokenizer, and
// whether they add up to exactly the recorded input tokens.
func (s *Synthesizer) ReportTurn(traceID string, conv *Conversation, k int) (*TurnReport, error) {
	msgs, err := conv.Messages(k)
	if err != nil {
		return nil, err
	}
	info := conv.Info(k)
	rep := &TurnReport{
		Trace: traceID, Turn: k, Turns: conv.NumTurns(),
		RecordedIn: info.In, RecordedOut: info.Out,
		Tokenizer: s.Tokenizer().Name(), TokenizerApproximate: s.Tokenizer().Approximate(),
		RandomSeed: s.opt.Seed, Live: s.Live(),
		Reconstruction: ReportReconstruction{
			LCPBlocks: info.LCP, KeptBlocks: info.Kept, NewBlocks: info.NewBlocks, TailTokens: info.Tail,
			AssistantBlocks: info.AssistantBlocks, ResetContext: info.Reset, Relabeled: info.Relabeled,
		},
	}
	if info.Cap >= 0 {
		c := info.Cap
		rep.Reconstruction.AssistantCap = &c
	}
	for _, m := range msgs {
		sm := ReportMessage{Role: m.Role, Content: m.Content, Expected: m.Tokens, Tokens: tokenizer.Count(s.Tokenizer(), m.Content), ToolResult: m.ToolResult}
		if m.LiveReplyTo >= 0 {
			j := m.LiveReplyTo
			sm.LiveReplyTo = &j
		}
		rep.BuiltTokens += sm.Tokens
		rep.Messages = append(rep.Messages, sm)
	}
	rep.Exact = rep.BuiltTokens == rep.RecordedIn
	return rep, nil
}

// Text renders rep for people: a header with the counts and the
// reconstruction, then each message with its role and tokens; contents
// longer than 600 bytes are cut unless full.
func (rep *TurnReport) Text(full bool) string {
	const maxShown = 600
	var b strings.Builder
	approx := ""
	if rep.TokenizerApproximate {
		approx = " (approximate)"
	}
	fmt.Fprintf(&b, "trace %s  turn %d of %d  tokenizer %s%s  seed %d\n", rep.Trace, rep.Turn, rep.Turns, rep.Tokenizer, approx, rep.RandomSeed)
	verdict := "exact"
	if !rep.Exact {
		verdict = fmt.Sprintf("OFF BY %+d", rep.BuiltTokens-rep.RecordedIn)
	}
	fmt.Fprintf(&b, "recorded in %d (out %d)  built %d tokens in %d messages: %s\n", rep.RecordedIn, rep.RecordedOut, rep.BuiltTokens, len(rep.Messages), verdict)
	r := rep.Reconstruction
	fmt.Fprintf(&b, "lcp %d blocks, kept %d, new %d (+%d tail tokens), assistant %d", r.LCPBlocks, r.KeptBlocks, r.NewBlocks, r.TailTokens, r.AssistantBlocks)
	if r.AssistantCap != nil {
		fmt.Fprintf(&b, " (planner cap %d)", *r.AssistantCap)
	}
	if r.ResetContext {
		b.WriteString(", reset_context")
	}
	if r.Relabeled {
		b.WriteString(", last block relabeled user")
	}
	b.WriteString("\n")
	for i, m := range rep.Messages {
		fmt.Fprintf(&b, "\n── [%d] %s  %d tokens", i, m.Role, m.Tokens)
		if m.Tokens != m.Expected {
			fmt.Fprintf(&b, " (built for %d)", m.Expected)
		}
		if m.LiveReplyTo != nil {
			fmt.Fprintf(&b, "  live slot: reply to turn %d", *m.LiveReplyTo)
		}
		if m.ToolResult {
			b.WriteString("  (tool result)")
		}
		fmt.Fprintf(&b, "  %d bytes\n", len(m.Content))
		content := m.Content
		if !full && len(content) > maxShown {
			content = content[:maxShown] + fmt.Sprintf("\n… (%d more bytes; --full shows all)\n", len(content)-maxShown)
		}
		b.WriteString(content)
		if !strings.HasSuffix(content, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}
