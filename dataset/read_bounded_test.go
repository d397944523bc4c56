package dataset

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// repeatReader yields n copies of byte c.
type repeatReader struct {
	c byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n)
	for i := range k {
		p[i] = r.c
	}
	r.n -= k
	return int(k), nil
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestReadJSONLMalformedCorpusMemory (issue 34, case 13): a 2 GB corpus
// of zeros took 6–7 GB before its error ("found end of input", wrong for
// NUL bytes): the reader gathered the whole "line" first. Now it stops at
// the first byte no JSON text holds, names it, and allocates about one
// buffer (here for 256 MB of zeros).
func TestReadJSONLMalformedCorpusMemory(t *testing.T) {
	var err error
	n := allocated(func() {
		_, _, err = ReadJSONL(&repeatReader{c: 0, n: 256 << 20}, "zeros.jsonl", ReadOptions{})
	})
	var te *TraceError
	if !errors.As(err, &te) || !errors.Is(err, ErrMalformedJSON) || te.Line != 1 || !strings.Contains(err.Error(), "NUL byte") {
		t.Fatalf("error %v, want a malformed-JSON TraceError at line 1 naming the NUL byte", err)
	}
	if strings.Contains(err.Error(), "end of input") {
		t.Errorf("a NUL byte is called the end of input: %v", err)
	}
	if n > 16<<20 {
		t.Errorf("reading 256 MB of zeros allocated %d MB, want about one buffer", n>>20)
	}
}

// TestReadJSONLNULLineSkipped: with SkipInvalid a line of zeros longer
// than the buffer is skipped as one line, and the next line is read with
// its own number.
func TestReadJSONLNULLineSkipped(t *testing.T) {
	in := io.MultiReader(&repeatReader{c: 0, n: 3 << 20}, strings.NewReader("\n"+traceLine("b", req(""))+"\n"))
	tr, st, err := ReadJSONL(in, "x.jsonl", ReadOptions{SkipInvalid: true})
	if err != nil || len(tr) != 1 || tr[0].ID != "b" || st.Skipped != 1 {
		t.Fatalf("%d traces, %+v, %v; want trace b and one skipped", len(tr), st, err)
	}
	var te *TraceError
	if len(st.Errors) != 1 || !errors.As(st.Errors[0], &te) || te.Line != 1 {
		t.Errorf("skip errors %v, want one at line 1", st.Errors)
	}
}

// TestReadJSONLLineTooLong: a line past MaxLineBytes (text that could be
// JSON) is refused once that much was read, not at the end of the file.
func TestReadJSONLLineTooLong(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 300 MB")
	}
	var err error
	n := allocated(func() {
		in := io.MultiReader(strings.NewReader(`{"id":"`), &repeatReader{c: 'a', n: 300 << 20})
		_, _, err = ReadJSONL(in, "long.jsonl", ReadOptions{})
	})
	if !errors.Is(err, ErrMalformedJSON) || !strings.Contains(err.Error(), "longer than 256 MiB") {
		t.Fatalf("error %v, want one saying the line is longer than 256 MiB", err)
	}
	if n > 3*(256<<20) {
		t.Errorf("allocated %d MB", n>>20)
	}
}
