package dataset

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// WriteText prints l for people (agentperf dataset cache locate): the
// path, then the key and whether the file exists, with its size.
func (l Location) WriteText(w io.Writer) {
	state := "missing"
	if fi, err := os.Stat(l.Path); err == nil {
		state = fmt.Sprintf("exists, %.1f MB", float64(fi.Size())/1e6)
	}
	fmt.Fprintf(w, "%s\n  key %s (%s)\n", l.Path, l.Key, state)
}

// WriteCacheText prints what opening c did to its cache file, for people
// (agentperf dataset cache build): "built: PATH" or "already cached: PATH",
// then the number of traces, the file's size and took, the time the open
// took. It fails when c has no cache file (CachePath is "") or the file
// cannot be read.
func (c *Corpus) WriteCacheText(w io.Writer, took time.Duration) error {
	if c.CachePath() == "" {
		return errors.New("the corpus has no dataset cache file")
	}
	fi, err := os.Stat(c.CachePath())
	if err != nil {
		return err
	}
	state := "built"
	if c.FromCache() {
		state = "already cached"
	}
	fmt.Fprintf(w, "%s: %s\n  %d traces, %.1f MB, %s\n", state, c.CachePath(), c.Len(), float64(fi.Size())/1e6, took.Round(time.Millisecond))
	return nil
}
