package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentperf/agentperf/internal/suggest"
	"github.com/agentperf/agentperf/internal/termio"

	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
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
	liveEnv, _ := run.LiveAssistantFromEnv(data.getenv)
	live := fs.Bool("live-assistant-responses", liveEnv,
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
		if termio.IsTerminal(io.out) {
			*format = "text"
		}
	}
	if *format != "json" && *format != "text" {
		return usagef("dataset show: --format %q%s: want json or text", *format, suggest.DidYouMean(*format, []string{"json", "text"}))
	}
	// --tokenizer as profile resolves it: "builtin" (the default), a
	// tokenizer.json[.zst] or tiktoken file or folder, or an HF model id in
	// the local hub cache.
	tok, err := tokenizer.Resolve(*tokSpec, data.getenv)
	if err != nil {
		return usagef("--tokenizer %s: %v", *tokSpec, err)
	}
	corpus, err := data.open(ctx, io)
	if err != nil {
		return err
	}
	defer corpus.Close()
	tr, err := corpus.Find(*traceID)
	if err != nil {
		return usagef("dataset show: %v", err)
	}
	s, err := prompttext.New(tok, prompttext.Options{Seed: *seed, Live: *live, CacheDir: data.cacheDir(),
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
	rep, err := s.ReportTurn(tr.ID, conv, *turn)
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	_, err = io.out.Write([]byte(rep.Text(*full)))
	return err
}
