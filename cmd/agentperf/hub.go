package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/agentperf/agentperf/internal/hfhub"
)

// isTerminal reports whether w is a terminal (for the progress bar).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// hubBackoff, when positive, replaces the hub client's first delay
// between retries (tests of an unreachable hub set it short).
var hubBackoff time.Duration

// newHub builds the Hugging Face hub client from the environment
// (HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE, HF_HUB_CACHE, proxies …), with
// a progress bar on io.err when it is a terminal and log lines otherwise.
// logf receives the client's notes ("hub: …"); nil prints them to io.err.
func newHub(getenv func(string) string, io stdio, logf func(string, ...any)) (*hfhub.Client, error) {
	cfg, err := hfhub.ConfigFromEnv(getenv)
	if err != nil {
		return nil, usagef("Hugging Face hub settings: %v", err)
	}
	// A bar on a terminal, log lines otherwise (and with
	// HF_HUB_DISABLE_PROGRESS_BARS).
	cfg.Progress = hfhub.NewProgressWriter(io.err, isTerminal(io.err) && !cfg.NoProgressBars)
	cfg.Logf = logf
	if hubBackoff > 0 {
		cfg.Backoff = hubBackoff
	}
	if logf == nil {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(io.err, format+"\n", args...) }
	}
	return hfhub.New(cfg), nil
}

// describeFiles prints one line per file of a download result.
func describeFiles(w io.Writer, res *hfhub.Result) {
	for _, f := range res.Files {
		how := "in the cache, verified"
		switch {
		case f.Repaired:
			how = "was damaged in the cache: downloaded again"
		case f.Downloaded && f.Resumed > 0:
			how = fmt.Sprintf("downloaded (resumed at %s)", hfhub.FormatBytes(f.Resumed))
		case f.Downloaded:
			how = "downloaded"
		}
		fmt.Fprintf(w, "  %s  %s  %s\n    %s\n", f.Name, hfhub.FormatBytes(f.Size), how, f.Path)
	}
}

// unreachable turns an error that says the hub cannot be reached into the
// advice for a download command (dataset download, tokenizer download):
// running that command again is no fix, so it names the network settings,
// the way to bring the cache over from a machine that reaches the hub, and
// alt, the way to do without the download. Other errors pass unchanged.
func unreachable(err error, what string, hub *hfhub.Client, getenv func(string) string, alt string) error {
	if !errors.Is(err, hfhub.ErrUnreachable) {
		return err
	}
	cause, _, _ := strings.Cut(err.Error(), "\n") // the hub's own advice follows; it is for other commands
	endpoint := getenv("HF_ENDPOINT")
	if endpoint == "" {
		endpoint = "https://huggingface.co (HF_ENDPOINT unset)"
	}
	return fmt.Errorf("%s: cannot download: %s\n"+
		"the hub %s is not reachable from here. To fix it:\n"+
		"  - check the network and the proxy settings (HTTPS_PROXY, NO_PROXY) and HF_ENDPOINT;\n"+
		"  - or run this same command on a machine that reaches the hub, copy its hub cache to %s here, and set HF_HUB_OFFLINE=1;\n"+
		"  - %s",
		what, cause, endpoint, hub.CacheDir(), alt)
}
