package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/internal/suggest"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/synth"
	"github.com/agentperf/agentperf/tokenizer"
)

func init() {
	registerDataset(command{name: "show", summary: "print the chat messages agentperf sends for one turn of a trace, with token counts", run: runDatasetShow})
}

const datasetShowExamples = `  # the messages of turn 3 of a trace, as JSON
  agentperf dataset show --input-file traces.jsonl.zst --trace trace_0004 --turn 3

  # for people: role headers, token counts, truncated contents (--full shows all)
  agentperf dataset show --input-file traces.jsonl.zst --trace trace_0004 --turn 3 --format text

  # with the model's real tokenizer and the run's seed
  agentperf dataset show --input-file traces.jsonl.zst --trace trace_0004 --turn 3 \
      --tokenizer ./deepseek_v3/tokenizer.json --random-seed 42`

// showReport is the JSON output of dataset show.
type showReport struct {
	Trace                string             `json:"trace"`
	Turn                 int                `json:"turn"`
	Turns                int                `json:"turns"`
	RecordedIn           int                `json:"recorded_in"`
	RecordedOut          int                `json:"recorded_out"`
	BuiltTokens          int                `json:"built_tokens"`
	Exact                bool               `json:"exact"`
	Tokenizer            string             `json:"tokenizer"`
	TokenizerApproximate bool               `json:"tokenizer_approximate"`
	RandomSeed           int64              `json:"random_seed"`
	Live                 bool               `json:"live_assistant_responses"`
	Reconstruction       showReconstruction `json:"reconstruction"`
	Messages             []showMessage      `json:"messages"`
}

type showReconstruction struct {
	LCPBlocks       int  `json:"lcp_blocks"`
	KeptBlocks      int  `json:"kept_blocks"`
	NewBlocks       int  `json:"new_blocks"`
	TailTokens      int  `json:"tail_tokens"`
	AssistantBlocks int  `json:"assistant_blocks"`
	AssistantCap    *int `json:"assistant_cap,omitempty"`
	ResetContext    bool `json:"reset_context"`
	Relabeled       bool `json:"relabeled_last_block"`
}

type showMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Tokens is the re-encoded token count of Content; Expected is what
	// the synthesizer built it for.
	Tokens      int  `json:"tokens"`
	Expected    int  `json:"expected_tokens"`
	LiveReplyTo *int `json:"live_reply_to,omitempty"`
	ToolResult  bool `json:"tool_result,omitempty"`
}

// openShowTokenizer resolves --tokenizer like profile does: "builtin"
// (the default), a tokenizer.json[.zst] or tiktoken file or folder, or an
// HF model id in the local hub cache.
func openShowTokenizer(spec string, getenv func(string) string) (tokenizer.Tokenizer, error) {
	t, err := tokenizer.Resolve(spec, getenv)
	if err != nil {
		return nil, usagef("--tokenizer %s: %v", spec, err)
	}
	return t, nil
}

func runDatasetShow(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("dataset show", "dataset show (--input-file PATH | --public-dataset ALIAS | --hf-dataset ORG/NAME) --trace ID [--turn K] [flags]", datasetShowExamples, io.out)
	data := addDatasetFlags(fs)
	traceID := fs.String("trace", "", "trace id to show (required)")
	turn := fs.Int("turn", 0, "parent turn (request index, from 0) to show")
	tokSpec := fs.String("tokenizer", "builtin", "tokenizer for prompt synthesis: a tokenizer.json/.tiktoken file or folder, an HF model id in the hub cache, or 'builtin' (approximate)")
	fs.Bool("tokenizer-trust-remote-code", false, "accepted for compatibility; agentperf runs no tokenizer code")
	seed := fs.Int64("random-seed", 0, "seed for the prompt text (use the run's --random-seed)")
	format := fs.String("format", "", "output format: json or text (default: text on a terminal, json otherwise, e.g. into a pipe or a file)")
	full := fs.Bool("full", false, "text format: print whole message contents instead of truncating them")
	live := fs.Bool("live-assistant-responses", envBool(data.getenv("AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES")),
		"show live-mode slots (default from AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("dataset show: unexpected argument %q", fs.Arg(0))
	}
	if *traceID == "" {
		return usagef("dataset show: --trace is required (run 'agentperf dataset plan' to list the traces and their sessions)")
	}
	if *format == "" {
		// A person at a terminal reads text; a script gets JSON.
		*format = "json"
		if isTerminal(io.out) {
			*format = "text"
		}
	}
	if *format != "json" && *format != "text" {
		return usagef("dataset show: --format %q%s: want json or text", *format, suggest.DidYouMean(*format, []string{"json", "text"}))
	}
	tok, err := openShowTokenizer(*tokSpec, data.getenv)
	if err != nil {
		return err
	}
	corpus, err := data.open(ctx, io)
	if err != nil {
		return err
	}
	defer corpus.Close()
	tr, err := findTrace(corpus, *traceID)
	if err != nil {
		return err
	}
	s, err := synth.New(tok, synth.Options{Seed: *seed, Live: *live, CacheDir: data.cacheDir(),
		Logf: func(format string, args ...any) { fmt.Fprintf(io.err, format+"\n", args...) }})
	if err != nil {
		return err
	}
	conv, err := s.Conversation(&tr)
	if err != nil {
		return err
	}
	if *turn < 0 || *turn >= conv.NumTurns() {
		return usagef("dataset show: --turn %d: trace %s has %d parent turns (0..%d)", *turn, tr.ID, conv.NumTurns(), conv.NumTurns()-1)
	}
	rep, err := buildShowReport(s, conv, &tr, *turn, *seed)
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	_, err = io.out.Write([]byte(renderShowText(rep, *full)))
	return err
}

func envBool(v string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}

// findTrace returns the trace with id, or a usage error naming a few ids.
func findTrace(c *dataset.Corpus, id string) (dataset.Trace, error) {
	var some []string
	for i := 0; i < c.Len(); i++ {
		tr := c.Trace(i)
		if tr.ID == id {
			return tr, nil
		}
		if len(some) < 5 {
			some = append(some, tr.ID)
		}
	}
	return dataset.Trace{}, usagef("dataset show: no trace %q in the corpus (%d traces; e.g. %s)", id, c.Len(), strings.Join(some, ", "))
}

func buildShowReport(s *synth.Synthesizer, conv *synth.Conversation, tr *dataset.Trace, k int, seed int64) (*showReport, error) {
	msgs, err := conv.Messages(k)
	if err != nil {
		return nil, err
	}
	info := conv.Info(k)
	rep := &showReport{
		Trace: tr.ID, Turn: k, Turns: conv.NumTurns(),
		RecordedIn: info.In, RecordedOut: info.Out,
		Tokenizer: s.Tokenizer().Name(), TokenizerApproximate: s.Tokenizer().Approximate(),
		RandomSeed: seed, Live: s.Live(),
		Reconstruction: showReconstruction{
			LCPBlocks: info.LCP, KeptBlocks: info.Kept, NewBlocks: info.NewBlocks, TailTokens: info.Tail,
			AssistantBlocks: info.AssistantBlocks, ResetContext: info.Reset, Relabeled: info.Relabeled,
		},
	}
	if info.Cap >= 0 {
		c := info.Cap
		rep.Reconstruction.AssistantCap = &c
	}
	for _, m := range msgs {
		sm := showMessage{Role: m.Role, Content: m.Content, Expected: m.Tokens, Tokens: tokenizer.Count(s.Tokenizer(), m.Content), ToolResult: m.ToolResult}
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

// renderShowText renders rep for people.
func renderShowText(rep *showReport, full bool) string {
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
