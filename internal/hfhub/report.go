package hfhub

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentperf/agentperf/internal/numfmt"
)

// WriteFiles prints one line per file of r (its name, size and how it got
// into the cache), then the file's path in the snapshot.
func (r *Result) WriteFiles(w io.Writer) {
	for _, f := range r.Files {
		how := "in the cache, verified"
		switch {
		case f.Repaired:
			how = "was damaged in the cache: downloaded again"
		case f.Downloaded && f.Resumed > 0:
			how = fmt.Sprintf("downloaded (resumed at %s)", numfmt.Bytes(f.Resumed))
		case f.Downloaded:
			how = "downloaded"
		}
		fmt.Fprintf(w, "  %s  %s  %s\n    %s\n", f.Name, numfmt.Bytes(f.Size), how, f.Path)
	}
}

// DownloadAdvice turns an error that says the hub cannot be reached
// (ErrUnreachable) into the advice for a command whose purpose is the
// download (what names it: "dataset download ORG/NAME"): running it again
// is no fix, so the advice names the network settings, how to bring the
// cache cacheDir over from a machine that reaches the hub, and alt, the way
// to do without the download. endpoint is $HF_ENDPOINT ("" when unset).
// Other errors are returned unchanged.
func DownloadAdvice(err error, what, cacheDir, endpoint, alt string) error {
	if !errors.Is(err, ErrUnreachable) {
		return err
	}
	cause, _, _ := strings.Cut(err.Error(), "\n") // the hub's own advice follows; it is for other commands
	if endpoint == "" {
		endpoint = DefaultEndpoint + " (HF_ENDPOINT unset)"
	}
	return fmt.Errorf("%s: cannot download: %s\n"+
		"the hub %s is not reachable from here. To fix it:\n"+
		"  - check the network and the proxy settings (HTTPS_PROXY, NO_PROXY) and HF_ENDPOINT;\n"+
		"  - or run this same command on a machine that reaches the hub, copy its hub cache to %s here, and set HF_HUB_OFFLINE=1;\n"+
		"  - %s",
		what, cause, endpoint, cacheDir, alt)
}
