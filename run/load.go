package run

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentperf/agentperf/text/chattemplate"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// Load checks the Spec (Validate), then opens its corpus and builds its
// tokenizer and synthesizer, the part of a run that several runs can
// share (Spec.Loaded). Problems with the inputs are *InputError; a
// cancelled ctx is returned as it is. The caller closes the Loaded.
func Load(ctx context.Context, s Spec) (*Loaded, error) {
	if err := s.Validate(); err != nil {
		return nil, inputErr(err)
	}
	lg := newRunLog(s.Log)
	return load(ctx, &s, lg)
}

func load(ctx context.Context, s *Spec, lg *runLog) (*Loaded, error) {
	t0 := time.Now()
	l := &Loaded{}
	if s.Corpus.Traces != nil {
		l.Traces = s.Corpus.Traces
	} else {
		openCtx := ctx
		if s.Corpus.OpenTimeout > 0 {
			var cancel context.CancelFunc
			openCtx, cancel = context.WithTimeout(ctx, s.Corpus.OpenTimeout)
			defer cancel()
		}
		c, err := dataset.Open(openCtx, s.Corpus.Source, s.Corpus.Options)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("open dataset: %w", err)
			}
			return nil, inputErr(err)
		}
		DescribeLoaded(lg.raw(), c, s.Corpus.Options, time.Since(t0))
		l.Corpus = c
		if l.Traces, err = c.ReadTraces(); err != nil {
			c.Close()
			return nil, fmt.Errorf("read the corpus: %w", err)
		}
	}
	tok, origin, err := resolveTokenizer(ctx, s, lg)
	if err != nil {
		l.Close()
		return nil, err
	}
	l.Tokenizer = origin
	if tok.Approximate() {
		lg.Printf("tokenizer: %s (approximate: prompt token counts follow the trace only roughly; pass --tokenizer with the served model's tokenizer for exact counts)", tok.Name())
	}
	if s.Tokenizer.ApplyChatTemplate {
		if l.ChatTemplate, err = loadChatTemplate(tok, origin, lg); err != nil {
			l.Close()
			return nil, inputErr(err)
		}
	}
	l.Synth, err = prompttext.New(tok, prompttext.Options{Seed: s.Replay.Seed, CacheDir: s.Tokenizer.CacheDir, Live: s.Replay.LiveAssistant, Logf: lg.Printf})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("prompt synthesis: %w", err)
	}
	l.Took = time.Since(t0)
	lg.Printf("start-up: corpus and prompt synthesizer ready in %s", l.Took.Round(time.Millisecond))
	return l, nil
}

// resolveTokenizer picks and loads the tokenizer as aiperf does: the
// Spec's tokenizer, else the (first) model name; "builtin" only when
// asked for by name, or with the in-process simulator when the model
// name is no hub id (nor a path). A hub model missing from the cache is
// downloaded when the Spec gives a hub.
func resolveTokenizer(ctx context.Context, s *Spec, lg *runLog) (tokenizer.Tokenizer, tokenizer.Origin, error) {
	t := s.Tokenizer
	if t.Given != nil {
		kind := "given"
		if t.Given.Approximate() {
			kind = "builtin"
		}
		return t.Given, tokenizer.Origin{Kind: kind}, nil
	}
	model := s.Replay.Models[0]
	name, what := t.Name, "--tokenizer "+t.Name
	if name == "" {
		name, what = model, fmt.Sprintf("no --tokenizer, so the tokenizer of --model %s", model)
		if _, err := os.Stat(name); err != nil && isSim(s.Replay.URL) && !tokenizer.IsHubModelID(name) {
			name, what = "builtin", fmt.Sprintf("--url %s with --model %s (not a Hugging Face model id): the builtin tokenizer", s.Replay.URL, model)
		}
	}
	opts := t.Options
	if opts.Revision != "" && !tokenizer.IsHubModelID(name) {
		return nil, tokenizer.Origin{}, inputErr(fmt.Errorf("--tokenizer-revision %s: the tokenizer (%s) is not a Hugging Face model id", opts.Revision, name))
	}
	if _, err := os.Stat(name); err != nil && tokenizer.IsHubModelID(name) && opts.Hub == nil && t.Hub != nil {
		hub, err := t.Hub()
		if err != nil {
			return nil, tokenizer.Origin{}, inputErr(err)
		}
		opts.Hub = hub
	}
	tok, origin, err := tokenizer.ResolveContext(ctx, name, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, tokenizer.Origin{}, err
		}
		if t.Name == "" {
			return nil, tokenizer.Origin{}, inputErr(fmt.Errorf("%s (as aiperf does) could not be loaded: %v\npass --tokenizer with the served model's tokenizer (a Hugging Face model id, a tokenizer.json or a folder), or --tokenizer builtin for approximate token counts", what, err))
		}
		return nil, tokenizer.Origin{}, inputErr(fmt.Errorf("--tokenizer %s: %v", name, err))
	}
	lg.Printf("tokenizer: %s (%s)", origin, what)
	return tok, origin, nil
}

// DescribeLoaded writes the "loaded N of M traces" line and how the
// corpus was obtained (generated, a cache hit or miss, with timing).
func DescribeLoaded(w io.Writer, c *dataset.Corpus, opt dataset.Options, took time.Duration) {
	id, ls := c.Identity(), c.LoadStats()
	var notes []string
	notes = append(notes, fmt.Sprintf("%d parent + %d subagent requests", id.ParentRequests, id.SubagentRequests))
	if ls.Select.DroppedOverContext > 0 {
		notes = append(notes, fmt.Sprintf("%d over --max-context-length %d", ls.Select.DroppedOverContext, opt.Select.MaxContextLength))
	}
	if ls.Select.Eligible > ls.Select.Total {
		notes = append(notes, fmt.Sprintf("%d eligible, capped by --num-dataset-entries %d", ls.Select.Eligible, opt.Select.NumEntries))
	}
	if ls.Read.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d invalid skipped", ls.Read.Skipped))
	}
	from := id.Path
	if id.HFRepo != "" {
		from = fmt.Sprintf("%s@%s (commit %s)", id.HFRepo, id.HFRevision, id.HFCommit)
	}
	// Of every trace in the source, the skipped invalid ones included.
	fmt.Fprintf(w, "dataset: loaded %d of %d traces (%s) from %s\n", c.Len(), ls.Select.Loaded+ls.Read.Skipped, strings.Join(notes, "; "), from)
	for i, e := range ls.Read.Errors {
		if i == 5 {
			fmt.Fprintf(w, "dataset:   ... and %d more skipped\n", ls.Read.Skipped-i)
			break
		}
		fmt.Fprintf(w, "dataset:   skipped: %v\n", e)
	}
	ms := float64(took.Microseconds()) / 1000
	switch {
	case id.SourceType == "synthetic":
		fmt.Fprintf(w, "dataset: generated in memory in %.1f ms\n", ms)
	case c.FromCache():
		fmt.Fprintf(w, "dataset: cache hit, opened in %.1f ms: %s\n", ms, c.CachePath())
	case c.CachePath() != "":
		fmt.Fprintf(w, "dataset: cache miss, built in %.1f ms: %s\n", ms, c.CachePath())
	case !opt.CacheEnabled:
		fmt.Fprintf(w, "dataset: read in %.1f ms (dataset cache off)\n", ms)
	default:
		fmt.Fprintf(w, "dataset: read in %.1f ms (not cached; see the warning above)\n", ms)
	}
}

// loadChatTemplate reads the chat template of the tokenizer loaded from
// origin (--apply-chat-template) and logs what it adds to a prompt in
// tok's count. A tokenizer without one (the builtin tokenizer, a
// tokenizer file without a tokenizer_config.json or without a
// chat_template) leaves the flag without effect, as in aiperf, and says
// so; a template that does not compile or render is an error.
func loadChatTemplate(tok tokenizer.Tokenizer, origin tokenizer.Origin, lg *runLog) (*chattemplate.Template, error) {
	if origin.Path == "" {
		lg.Printf("--apply-chat-template: the %s tokenizer has no chat template; the flag has no effect (as in aiperf)", origin.Kind)
		return nil, nil
	}
	t, err := chattemplate.LoadBeside(origin.Path)
	if errors.Is(err, chattemplate.ErrNoTemplate) {
		lg.Printf("--apply-chat-template: %v; the flag has no effect (as in aiperf)", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--apply-chat-template: %w", err)
	}
	o, err := TemplateOverhead(t, tok)
	if err != nil {
		return nil, fmt.Errorf("--apply-chat-template: %s: %w", t.Path, err)
	}
	lg.Printf("--apply-chat-template: the chat template of %s adds %d tokens to a system + user prompt and %d per further assistant + user turn (%s's count); requests still carry chat messages, and ISL is the server's usage.prompt_tokens, which includes them", t.Path, o.First, o.PerTurn, tok.Name())
	return t, nil
}

// Overhead is what a chat template adds to the tokens of the messages'
// contents.
type Overhead struct {
	// First is added to a request of one system and one user message
	// (generation prompt included).
	First int `json:"first"`
	// PerTurn is added by each further assistant and user message pair.
	PerTurn int `json:"per_turn"`
}

// TemplateOverhead measures t's overhead in tok's count: rendered prompts of
// one-token messages, less their contents.
func TemplateOverhead(t *chattemplate.Template, tok tokenizer.Tokenizer) (Overhead, error) {
	const x = "x"
	nx := len(tok.Encode(x))
	msgs := []chattemplate.Message{{Role: "system", Content: x}, {Role: "user", Content: x}}
	one, err := t.Render(msgs, true)
	if err != nil {
		return Overhead{}, err
	}
	two, err := t.Render(append(msgs, chattemplate.Message{Role: "assistant", Content: x}, chattemplate.Message{Role: "user", Content: x}), true)
	if err != nil {
		return Overhead{}, err
	}
	n1, n2 := len(tok.Encode(one)), len(tok.Encode(two))
	return Overhead{First: n1 - 2*nx, PerTurn: n2 - n1 - 2*nx}, nil
}
