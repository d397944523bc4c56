package termio

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestPipeWriterTurnsOff: a write to a pipe whose reader died (tee killed
// with the job) fails once, and the output is off from then on: later
// writes report success and write nothing, so that no caller stops the
// run for them.
func TestPipeWriterTurnsOff(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pw := Output(w)
	if _, err := pw.Write([]byte("before\n")); err != nil {
		t.Fatalf("a write to a live pipe failed: %v", err)
	}
	r.Close() // the reader dies
	if _, err := pw.Write([]byte("after\n")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("the first write to a dead pipe: %v, want EPIPE", err)
	}
	for range 3 {
		if n, err := pw.Write([]byte("later\n")); err != nil || n != 6 {
			t.Fatalf("a later write: %d, %v; want it dropped as written", n, err)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(w) || IsTerminal(&bytes.Buffer{}) {
		t.Error("a pipe or a buffer is a terminal")
	}
}
