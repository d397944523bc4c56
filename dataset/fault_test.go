package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardTurnsATruncatedCacheIntoAnError reproduces the crash of a run
// whose cache file another process truncated: reading the hash ids of a
// trace served from the mapping then raises SIGBUS, which without Guard
// kills the process ("fatal error: fault"). Inside Guard it is a
// *FaultError naming the file and matching ErrCacheChanged; ReadTraces
// does the same for the tables.
func TestGuardTurnsATruncatedCacheIntoAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.dscache")
	traces := cacheGenTraces(7, 400)
	if err := WriteCache(path, traces, Identity{}); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.ReadTraces()
	if err != nil {
		t.Fatal(err)
	}
	sum := func() error {
		var s uint64
		for i := range got {
			for _, r := range got[i].Requests {
				for _, h := range r.HashIDs {
					s += uint64(h)
				}
			}
		}
		guardSink = s // keep the reads
		return nil
	}
	if err := Guard(sum); err != nil {
		t.Fatalf("reading an intact mapping: %v", err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	err = Guard(sum)
	var fe *FaultError
	if !errors.As(err, &fe) || !errors.Is(err, ErrCacheChanged) {
		t.Fatalf("Guard after truncation = %v, want a *FaultError matching ErrCacheChanged", err)
	}
	if fe.Path != path || fe.Offset >= fe.Size || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "do not modify the cache while a run uses it") {
		t.Fatalf("fault error %+v: %v", fe, err)
	}
	if _, err := c.ReadTraces(); !errors.Is(err, ErrCacheChanged) {
		t.Fatalf("ReadTraces after truncation = %v, want ErrCacheChanged", err)
	}
	// The process is fine: the guard restored the fault mode, and an
	// intact corpus still reads.
	if err := Guard(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
}

var guardSink uint64

// TestGuardPassesOtherPanicsThrough: Guard converts faults on cache
// mappings only; a nil dereference or any other panic is a bug and keeps
// propagating; f's own error is returned as is.
func TestGuardPassesOtherPanicsThrough(t *testing.T) {
	t.Parallel()
	mine := errors.New("mine")
	if err := Guard(func() error { return mine }); err != mine {
		t.Fatalf("Guard returned %v, want f's error", err)
	}
	for name, f := range map[string]func() error{
		"nil dereference": func() error { var p *Trace; _ = p.ID; return nil },
		"panic":           func() error { panic("boom") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("the panic was swallowed")
				}
			}()
			_ = Guard(f)
		})
	}
}
