// Package termio is the process's standard output and error as agentperf
// writes to them: a terminal as it is, a pipe or a file through a writer
// that a failed write turns off (so that a dead `| tee` never stops a
// run), and whether a writer is a terminal (for the live view and the
// progress bars).
package termio

import (
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Output is f (stdout or stderr) as the commands write to it: a terminal
// as it is (the live view and the progress bars look at the *os.File; a
// terminal gives no EPIPE), a pipe or file through a Writer.
func Output(f *os.File) io.Writer {
	if term.IsTerminal(int(f.Fd())) {
		return f
	}
	return &Writer{w: f}
}

// Writer is the process's stdout or stderr when it is a pipe or a file.
// The first failed write (a closed pipe, a full disk) turns it off: that
// write returns its error once (the run log notes it in logs/aiperf.log),
// and every later one is dropped and reported as written, so that live
// output never stops a run. The run's log file and artifacts do not go
// through it.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return len(p), nil
	}
	n, err := t.w.Write(p)
	if err != nil {
		t.err = err
		return n, err
	}
	return n, nil
}
