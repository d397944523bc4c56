package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentperf/agentperf/internal/hfhub"
	"github.com/agentperf/agentperf/text/tokenizer"
)

func init() {
	register(command{name: "tokenizer", summary: "download a model's tokenizer into the Hugging Face hub cache", run: runTokenizer})
}

func runTokenizer(ctx context.Context, args []string, io stdio) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(io.out, "Usage:\n  agentperf tokenizer download ORG/NAME[@REV] [flags]\n\nCommands:\n  download  download a model's tokenizer files (tokenizer.json or tiktoken, tokenizer_config.json) into the hub cache")
		fmt.Fprint(io.out, "\nRun 'agentperf tokenizer download --help' for its flags.\n\nExamples:\n  agentperf tokenizer download deepseek-ai/DeepSeek-V3\n  HF_HUB_CACHE=/shared/hf-hub-cache agentperf tokenizer download Qwen/Qwen3-235B-A22B@main\n")
		if len(args) == 0 {
			return usagef("tokenizer: a command is required")
		}
		return nil
	}
	if args[0] != "download" {
		return usagef("tokenizer: unknown command %q (run 'agentperf tokenizer --help')", args[0])
	}
	return runTokenizerDownload(ctx, args[1:], io)
}

const tokenizerDownloadExamples = `  # the tokenizer of the model a server serves (what 'profile --model' uses by default)
  agentperf tokenizer download deepseek-ai/DeepSeek-V3

  # once per cluster into the shared cache; runs then use it with HF_HUB_OFFLINE=1
  HF_HUB_CACHE=/shared/hf-hub-cache agentperf tokenizer download meta-llama/Llama-3.1-8B-Instruct

Only the tokenizer files are fetched: tokenizer.json (else tiktoken.model or *.tiktoken) and
tokenizer_config.json, never the weights. Gated models (Llama …) need a token: HF_TOKEN, or the
file HF_TOKEN_PATH (default $HF_HOME/token, written by 'hf auth login'), for an account that
was granted access on the model's page.`

func runTokenizerDownload(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("tokenizer download", "tokenizer download ORG/NAME[@REV] [flags]", tokenizerDownloadExamples, io.out)
	rev := fs.String("revision", "", "branch, tag or commit (default: the @REV of the name, else main)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || !tokenizer.IsHubModelID(fs.Arg(0)) {
		return usagef("tokenizer download: want one Hugging Face model id ORG/NAME[@REV] (see 'agentperf tokenizer download --help')")
	}
	hub, err := newHub(os.Getenv, io, nil)
	if err != nil {
		return err
	}
	tok, origin, res, err := tokenizer.Download(ctx, hub, fs.Arg(0), tokenizer.ResolveOptions{Getenv: os.Getenv, Revision: *rev})
	if err != nil {
		if ctx.Err() == nil {
			err = asUsage(hfhub.DownloadAdvice(err, "tokenizer download "+fs.Arg(0), hub.CacheDir(), os.Getenv("HF_ENDPOINT"),
				"or do without it: give profile a local tokenizer with --tokenizer PATH (a tokenizer.json or a folder), or --tokenizer builtin for approximate token counts"))
		}
		return err
	}
	fmt.Fprintf(io.out, "tokenizer %s@%s: commit %s\n", origin.Repo, origin.Revision, origin.Commit)
	res.WriteFiles(io.out)
	fmt.Fprintf(io.out, "loads: %s encodes %q to %d tokens\n", tok.Name(), "Hello, world!", len(tok.Encode("Hello, world!")))
	fmt.Fprintf(io.out, "hub cache: %s\n", hub.CacheDir())
	return nil
}
