package dataset

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// ReadOptions controls how traces are read.
type ReadOptions struct {
	// SkipInvalid skips malformed or invalid traces (counting them in
	// ReadStats) instead of failing on the first one. I/O and decompression
	// errors are never skipped.
	SkipInvalid bool
}

// maxSkipErrors is how many skip reasons ReadStats keeps.
const maxSkipErrors = 10

// ReadStats reports what a read saw.
type ReadStats struct {
	// Traces is the number of traces returned.
	Traces int
	// Skipped is the number of invalid traces skipped (SkipInvalid only).
	Skipped int
	// Errors holds the first few skip reasons (each a *TraceError).
	Errors []error
	// SubagentEntries and SubagentRequests count subagent entries and the
	// requests inside them (recursively) over the returned traces.
	SubagentEntries, SubagentRequests int
}

// reader accumulates traces and enforces the corpus-wide rules (unique
// ids) across lines or files.
type reader struct {
	opt    ReadOptions
	traces []Trace
	stats  ReadStats
	ids    map[string]string // trace id → where it was first seen
}

func newReader(opt ReadOptions) *reader {
	return &reader{opt: opt, ids: make(map[string]string)}
}

// add records a parsed trace (or a parse error) found at where. It returns
// a non-nil error when the read must stop.
func (r *reader) add(t Trace, err error, where func() string, dupErr func(first string) error) error {
	if err == nil {
		if first, dup := r.ids[t.ID]; dup {
			err = dupErr(first)
		}
	}
	if err != nil {
		if !r.opt.SkipInvalid {
			return err
		}
		r.stats.Skipped++
		if len(r.stats.Errors) < maxSkipErrors {
			r.stats.Errors = append(r.stats.Errors, err)
		}
		return nil
	}
	r.ids[t.ID] = where()
	r.traces = append(r.traces, t)
	r.stats.Traces++
	r.stats.SubagentEntries += countSubagents(t.Subagents)
	r.stats.SubagentRequests += t.NumSubagentRequests()
	return nil
}

func countSubagents(ss []Subagent) int {
	n := len(ss)
	for i := range ss {
		n += countSubagents(ss[i].Subagents)
	}
	return n
}

// MaxLineBytes bounds one line of a JSONL corpus (256 MiB): the reader
// holds at most one line, so its memory is bounded by this and not by the
// file. The largest trace line of the published corpora is a few MB.
const MaxLineBytes = 256 << 20

// notJSONByte returns the index of the first byte of b that no JSON text
// holds (a control byte other than tab, line feed and carriage return:
// inside a string it must be escaped), or -1.
func notJSONByte(b []byte) int {
	for i, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return -1
}

// ReadJSONL reads one trace per line from r (the layout of an HF
// traces.jsonl). Blank lines are ignored. name is used in error positions.
//
// Every trace is validated (see TraceError and the Err* kinds); trace ids
// must be unique. Unknown fields are errors, as in aiperf's models
// (extra="forbid"), except the trace-level "totals" summary, which is
// accepted and ignored.
//
// The returned traces are read-only by contract: the HashIDs of a request
// that extends the previous request's ids (the usual turn) share storage
// with them, and many requests' ids share one backing array. Unless opt.SkipInvalid is set, the first invalid line
// stops the read with a *TraceError naming name, the line, the trace id,
// the request index and the field.
func ReadJSONL(r io.Reader, name string, opt ReadOptions) ([]Trace, ReadStats, error) {
	rd := newReader(opt)
	br := bufio.NewReaderSize(r, 1<<20)
	p := newParser(name)
	var long []byte
	var pieces [][]byte
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer is gathered, but never more
			// of it than it takes to know it is not a trace: up to the
			// first byte no JSON text holds (a NUL, another control
			// byte: a file of zeros, a binary file), or MaxLineBytes.
			// The pieces are kept apart until the line is whole and
			// joined once: a growing slice would allocate several times
			// the line on its way.
			pieces = append(pieces[:0], bytes.Clone(b))
			size := len(b)
			bad := notJSONByte(b) >= 0
			for errors.Is(err, bufio.ErrBufferFull) && !bad && size <= MaxLineBytes {
				b, err = br.ReadSlice('\n')
				if k := notJSONByte(b); k >= 0 {
					b, bad = b[:k+1], true
				}
				pieces = append(pieces, bytes.Clone(b))
				size += len(b)
			}
			if size > MaxLineBytes && !bad {
				return nil, rd.stats, &TraceError{File: name, Line: line, Offset: -1, Request: -1, Subrequest: -1,
					Err: kindf(ErrMalformedJSON, "the line is longer than %d MiB (the largest trace line of the published corpora is a few MB): not one trace per line; is this a JSONL corpus?", MaxLineBytes>>20)}
			}
			if cap(long) < size {
				long = make([]byte, 0, size)
			}
			long = long[:0]
			for _, piece := range pieces {
				long = append(long, piece...)
			}
			clear(pieces)
			if bad {
				// The parser stops at (or before) the bad byte and says
				// where and what. With SkipInvalid the rest of the line is
				// passed over unread and the read goes on at the next
				// line; without, that error ends the read.
				for opt.SkipInvalid && errors.Is(err, bufio.ErrBufferFull) {
					_, err = br.ReadSlice('\n')
				}
				if errors.Is(err, bufio.ErrBufferFull) {
					err = nil
				}
			}
			b = long
		}
		if err != nil && err != io.EOF {
			return nil, rd.stats, fmt.Errorf("read %s line %d: %w", name, line, err)
		}
		if len(bytes.TrimSpace(b)) > 0 {
			p.line = line
			t, perr := p.parseTrace(b)
			ln := line
			if aerr := rd.add(t, perr, func() string { return fmt.Sprintf("line %d", ln) }, func(first string) error {
				return &TraceError{File: name, Line: ln, Offset: -1, TraceID: t.ID, Request: -1, Subrequest: -1, Field: "id",
					Err: kindf(ErrDuplicateTraceID, "trace id %q already used at %s; ids must be unique in a corpus", t.ID, first)}
			}); aerr != nil {
				return nil, rd.stats, aerr
			}
		}
		if err == io.EOF {
			break
		}
	}
	return rd.traces, rd.stats, nil
}

// ReadTraceJSON parses one trace: the content of one file of the directory
// layout (kv-cache-tester writes one pretty-printed trace per file). name
// is used in error positions; errors carry the line computed from the byte
// offset.
func ReadTraceJSON(data []byte, name string) (Trace, error) {
	p := newParser(name)
	t, err := p.parseTrace(data)
	if err != nil {
		return Trace{}, withLine(err, data)
	}
	return t, nil
}

// withLine fills in the line of a TraceError from its offset in data.
func withLine(err error, data []byte) error {
	var te *TraceError
	if errors.As(err, &te) && te.Line == 0 && te.Offset >= 0 && te.Offset <= len(data) {
		te.Line = 1 + bytes.Count(data[:te.Offset], []byte{'\n'})
		te.Offset -= bytes.LastIndexByte(data[:te.Offset], '\n') + 1
	}
	return err
}

// readJSONFile reads a .json file holding one trace or several traces one
// after another (pretty-printed or one per line).
func readJSONFile(data []byte, name string, rd *reader) error {
	p := newParser(name)
	i := 0
	for {
		for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
			i++
		}
		if i >= len(data) {
			return nil
		}
		start := i
		t, err := p.parseTraceAt(data, i)
		if err != nil {
			err = withLine(err, data)
			if !rd.opt.SkipInvalid {
				return err
			}
			// cannot resynchronise inside one JSON text: count and stop
			_ = rd.add(Trace{}, err, nil, nil)
			return nil
		}
		i = p.i
		ln := 1 + bytes.Count(data[:start], []byte{'\n'})
		if aerr := rd.add(t, nil, func() string { return fmt.Sprintf("%s:%d", name, ln) }, func(first string) error {
			return &TraceError{File: name, Line: ln, Offset: -1, TraceID: t.ID, Request: -1, Subrequest: -1, Field: "id",
				Err: kindf(ErrDuplicateTraceID, "trace id %q already used at %s; ids must be unique in a corpus", t.ID, first)}
		}); aerr != nil {
			return aerr
		}
	}
}

// ReadPath reads a corpus from path:
//
//   - a file ending in .jsonl (one trace per line) or .json (one trace, or
//     several one after another), optionally compressed: .zst/.zstd (zstd)
//     or .gz (gzip);
//   - a directory of *.json, *.json.zst and *.json.gz files, one trace per
//     file, read in sorted name order (the kv-cache-tester layout). Other
//     files in the directory are ignored.
//
// Trace ids must be unique across the whole corpus.
func ReadPath(path string, opt ReadOptions) ([]Trace, ReadStats, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, ReadStats{}, fmt.Errorf("read corpus: %w", err)
	}
	if fi.IsDir() {
		return readDir(path, opt)
	}
	base, comp := splitCompression(path)
	switch {
	case strings.HasSuffix(base, ".jsonl"):
		f, err := os.Open(path)
		if err != nil {
			return nil, ReadStats{}, fmt.Errorf("read corpus: %w", err)
		}
		defer f.Close()
		r, closeFn, err := decompress(f, comp, path)
		if err != nil {
			return nil, ReadStats{}, err
		}
		defer closeFn()
		return ReadJSONL(r, path, opt)
	case strings.HasSuffix(base, ".json"):
		data, err := readAll(path, comp)
		if err != nil {
			return nil, ReadStats{}, err
		}
		rd := newReader(opt)
		if err := readJSONFile(data, path, rd); err != nil {
			return nil, rd.stats, err
		}
		return rd.traces, rd.stats, nil
	default:
		return nil, ReadStats{}, fmt.Errorf("read corpus %s: unknown file type; expected .jsonl or .json (optionally .zst or .gz), or a directory of .json files", path)
	}
}

func readDir(dir string, opt ReadOptions) ([]Trace, ReadStats, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, ReadStats{}, fmt.Errorf("read corpus: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		if base, _ := splitCompression(e.Name()); strings.HasSuffix(base, ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, ReadStats{}, fmt.Errorf("read corpus %s: the directory holds no *.json, *.json.zst or *.json.gz trace files", dir)
	}
	rd := newReader(opt)
	for _, n := range names {
		full := filepath.Join(dir, n)
		_, comp := splitCompression(n)
		data, err := readAll(full, comp)
		if err != nil {
			return nil, rd.stats, err
		}
		if err := readJSONFile(data, full, rd); err != nil {
			return nil, rd.stats, err
		}
	}
	return rd.traces, rd.stats, nil
}

// splitCompression returns the name without a compression suffix and the
// suffix ("zst", "gz" or "").
func splitCompression(name string) (string, string) {
	switch {
	case strings.HasSuffix(name, ".zst"):
		return strings.TrimSuffix(name, ".zst"), "zst"
	case strings.HasSuffix(name, ".zstd"):
		return strings.TrimSuffix(name, ".zstd"), "zst"
	case strings.HasSuffix(name, ".gz"):
		return strings.TrimSuffix(name, ".gz"), "gz"
	}
	return name, ""
}

func decompress(r io.Reader, comp, name string) (io.Reader, func(), error) {
	switch comp {
	case "zst":
		d, err := zstd.NewReader(r, zstd.WithDecoderLowmem(false))
		if err != nil {
			return nil, nil, fmt.Errorf("read corpus %s: zstd: %w", name, err)
		}
		return &namedReader{r: d, name: name, kind: "zstd"}, d.Close, nil
	case "gz":
		g, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("read corpus %s: gzip: %w", name, err)
		}
		return &namedReader{r: g, name: name, kind: "gzip"}, func() { g.Close() }, nil
	}
	return r, func() {}, nil
}

// namedReader prefixes decompression errors with the file and codec.
type namedReader struct {
	r          io.Reader
	name, kind string
}

func (n *namedReader) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("decompress %s (%s): %w", n.name, n.kind, err)
	}
	return k, err
}

func readAll(path, comp string) ([]byte, error) {
	if comp == "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read corpus: %w", err)
		}
		return b, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read corpus: %w", err)
	}
	defer f.Close()
	r, closeFn, err := decompress(f, comp, path)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read corpus %s: %w", path, err)
	}
	return b, nil
}
