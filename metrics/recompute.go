package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// maxLine bounds one JSONL line (records are a few KB; error messages are
// truncated by the engine).
const maxLine = 16 << 20

// parsedExport is what readExport returns: the rows and errors of an
// export's records, and every record counted in its bucket (with
// countOverflows, those of the overflow export too).
type parsedExport struct {
	aggInput
	counts Tally
	// torn is 1 when the last line was cut mid-write and left out.
	torn int
}

// readExport parses profile_export.jsonl lines into rows. Blank lines are
// skipped; a malformed line is an error naming its line number, except,
// when tornTail is set (a .partial file that does not end with a newline:
// the process died mid-write), the last line, which is then left out and
// counted in parsedExport.torn.
func readExport(r io.Reader, name string, tornTail bool, each func(*RecordLine)) (*parsedExport, error) {
	p := &parsedExport{}
	torn, err := ReadRecords(r, name, tornTail, func(l *RecordLine) error {
		e := entry{r: &l.Record, b: l.Record.Bucket, v: l.Values}
		p.counts.Add(&l.Record)
		rw, er := tallied(&e)
		p.addRow(e.b, &rw, er)
		if each != nil {
			each(l)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if torn {
		p.torn = 1
	}
	return p, nil
}

// readJSONL calls add with each non-blank line of the JSONL stream r
// (spaces trimmed; lines up to 16 MiB). An error of add or of reading is
// returned wrapped in ErrBadExport, naming the stream and the line. With
// tornTail (the stream is a .partial file that does not end with a
// newline: its writer died mid-write) an error on the last line is
// forgiven instead, and torn reports it.
func readJSONL(r io.Reader, name string, tornTail bool, add func(line []byte) error) (torn bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	var pending error // forgiven when it is the last line of a torn stream
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if pending != nil {
			return false, pending
		}
		if err := add(b); err != nil {
			pending = fmt.Errorf("%w: %s:%d: %w", ErrBadExport, name, line, err)
			if !tornTail {
				return false, pending
			}
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("%w: %s after line %d: %w", ErrBadExport, name, line, err)
	}
	return pending != nil, nil
}

// EndsMidLine reports whether the file at path is non-empty and its last
// byte is not a newline: a JSONL stream cut by a process that died
// mid-write.
func EndsMidLine(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], st.Size()-1); err != nil {
		return false
	}
	return b[0] != '\n'
}

// countOverflows counts the records of context_overflow_export.jsonl (at
// path; none when the file is absent) in p's overflow bucket, by phase. A
// line that is not a record (one cut mid-write) counts as profiling, as a
// record without a phase does.
func (p *parsedExport) countOverflows(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var l RecordLine
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		phase := PhaseProfiling
		if DecodeRecordLine(b, &l) == nil && l.Record.Phase == PhaseWarmup {
			phase = PhaseWarmup
		}
		p.counts.Count(BucketOverflow, phase, false)
	}
	return sc.Err()
}

// summary computes the aggregates of p with info, whose accounting is
// p's counts with Sent as info gives it (0: their sum), and checks that
// accounting (Summary.AccountingErr).
func (p *parsedExport) summary(info RunInfo, slice time.Duration) *Summary {
	c := p.counts.Counts()
	sent := info.Accounting.Sent
	info.Accounting = c.Accounting()
	if sent == 0 {
		sent = info.Accounting.Total()
	}
	info.Accounting.Sent = sent
	s := aggregate(&p.rows, overflowCounts{profiling: c.Profiling.Overflows, warmup: c.Warmup.Overflows}, p.errs.list(), info, slice)
	s.AccountingErr = info.Accounting.Check()
	return s
}

// RecomputeOptions configure Recompute. The zero value uses the local time zone.
type RecomputeOptions struct {
	Location *time.Location
	// Force lets a recomputation from profile_export.jsonl.partial replace
	// an aggregate whose accounting adds up (see RecomputeWith).
	Force bool
	// EachRecord, when set, is called with every record of the record
	// file as it is read, so that a caller that wants more of the records
	// than the aggregates does not read the file again. The line is reused
	// from one call to the next: copy what you keep.
	EachRecord func(*RecordLine)
	// Aggregate, when set, is called with the folder's aggregate JSON as
	// it is read for the run context (not when the folder has none), so
	// that a caller that wants more of it does not read it again.
	Aggregate func(*AggregateFile)
}

// The names a recomputation from profile_export.jsonl.partial is written
// to when the folder's aggregate says its accounting adds up: the partial
// records cannot replace a complete account of the run.
const (
	FileAggregateFromPartialJSON = "profile_export_aiperf_from_partial.json"
	FileAggregateFromPartialCSV  = "profile_export_aiperf_from_partial.csv"
)

// The names a recomputation from a complete profile_export.jsonl is
// written to when the folder's aggregate says its accounting adds up and
// the recount does not (a duplicated line, a line of another run): such
// a recomputation never replaces the aggregate without --force.
const (
	FileAggregateRecomputedJSON = "profile_export_aiperf_recomputed.json"
	FileAggregateRecomputedCSV  = "profile_export_aiperf_recomputed.csv"
)

// ErrAggregateKept is wrapped by RecomputeWith's error when it kept the
// folder's aggregate and wrote the recomputation under
// FileAggregateFromPartialJSON instead.
var ErrAggregateKept = errors.New("the aggregate was kept")

// WarnAggregatesCoverAll ends the warning of a run whose record stream
// failed (a full disk): its aggregates count every record, also those
// that did not reach the file. A recomputation from the file does not, so
// it drops that warning.
const WarnAggregatesCoverAll = "the aggregates cover every record"

// Recompute recomputes the aggregates of an artifact folder from its
// profile_export.jsonl (and context_overflow_export.jsonl), keeps the run
// context of the existing profile_export_aiperf.json (identity, windows,
// input_config, metadata), rewrites profile_export_aiperf.json and .csv,
// and prints the summary table to w. The accounting is recounted from the
// files and checked against the recorded number of requests sent; a
// mismatch is written, returned (wrapping ErrAccounting) and shown.
func Recompute(dir string, w io.Writer) (*Summary, error) {
	return RecomputeWith(dir, w, RecomputeOptions{})
}

// RecomputeWith is Recompute with options.
func RecomputeWith(dir string, w io.Writer, opt RecomputeOptions) (*Summary, error) {
	if opt.Location == nil {
		opt.Location = time.Local
	}
	s, version, src, err := summarize(dir, opt)
	if err != nil {
		return nil, err
	}
	eo := exportOptions{version: version, location: opt.Location}
	var kept error
	if src.existingAddsUp && !opt.Force && (src.partial || s.AccountingErr != nil) {
		// Never replace a complete account of the run with one that is
		// not (from the partial records, or from a record file whose
		// recount does not add up: a duplicated or foreign line): the
		// recomputation goes beside it.
		jsonName, csvName := FileAggregateFromPartialJSON, FileAggregateFromPartialCSV
		why := fmt.Sprintf("%s%s lacks %s", FileRecords, partialSuffix, src.existing.lacking(s.Info.Accounting))
		if !src.partial {
			jsonName, csvName = FileAggregateRecomputedJSON, FileAggregateRecomputedCSV
			why = fmt.Sprintf("the recount of %s does not (%s: %v)", FileRecords, s.Info.Accounting.summary(), s.AccountingErr)
		}
		j, err := s.aggregateJSON(eo)
		if err != nil {
			return s, err
		}
		if err := writeFileAtomic(dir, jsonName, j); err != nil {
			return s, err
		}
		if err := writeFileAtomic(dir, csvName, s.aggregateCSV()); err != nil {
			return s, err
		}
		kept = fmt.Errorf("%w: %s says its accounting adds up (%s) and %s; the recomputation was written to %s and %s (--force replaces the aggregate)",
			ErrAggregateKept, filepath.Join(dir, FileAggregateJSON), src.existing.summary(), why, jsonName, csvName)
	} else if err := s.writeAggregates(dir, eo, false); err != nil { // the timeslice files are left as they are
		return s, err
	}
	if w != nil {
		if err := s.WriteTable(w); err != nil {
			return s, err
		}
	}
	return s, errors.Join(kept, s.AccountingErr)
}

// summary is the accounting in one line.
func (a Accounting) summary() string {
	return fmt.Sprintf("%d sent: profiling %d ok + %d failed, warmup %d ok + %d failed, %d context overflows, %d cancelled",
		a.Sent, a.ProfilingOK, a.ProfilingErrors, a.WarmupOK, a.WarmupErrors, a.Overflows, a.Cancelled)
}

// lacking says which records b (a recount) lacks against a.
func (a Accounting) lacking(b Accounting) string {
	var parts []string
	for _, c := range []struct {
		name string
		a, b int
	}{
		{"profiling ok", a.ProfilingOK, b.ProfilingOK}, {"profiling failed", a.ProfilingErrors, b.ProfilingErrors},
		{"warmup ok", a.WarmupOK, b.WarmupOK}, {"warmup failed", a.WarmupErrors, b.WarmupErrors},
		{"context overflow", a.Overflows, b.Overflows}, {"cancelled", a.Cancelled, b.Cancelled},
	} {
		if c.b < c.a {
			parts = append(parts, fmt.Sprintf("%d %s", c.a-c.b, c.name))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("none of the aggregate's records by count, but holds %d of the %d requests sent", b.Total(), a.Sent)
	}
	return fmt.Sprintf("%s records of the %d requests sent (it holds %d)", strings.Join(parts, ", "), a.Sent, b.Total())
}

// Summarize computes the Summary of an artifact folder as Recompute does
// (from profile_export.jsonl, context_overflow_export.jsonl and the run
// context of profile_export_aiperf.json) without writing or printing
// anything. An accounting mismatch is not an error here: it is in
// Summary.AccountingErr.
func Summarize(dir string, opt RecomputeOptions) (*Summary, error) {
	s, _, _, err := summarize(dir, opt)
	return s, err
}

// reportSource is what summarize read the records from.
type reportSource struct {
	// partial: the records came from profile_export.jsonl.partial.
	partial bool
	// existing is the accounting of the folder's aggregate before, and
	// existingAddsUp whether that aggregate said it adds up.
	existing       Accounting
	existingAddsUp bool
}

// summarize is the read-only part of RecomputeWith; it also returns the
// aiperf_version to write back and where the records came from.
func summarize(dir string, opt RecomputeOptions) (*Summary, string, reportSource, error) {
	if opt.Location == nil {
		opt.Location = time.Local
	}
	path := filepath.Join(dir, FileRecords)
	f, err := os.Open(path)
	partial := false
	if errors.Is(err, os.ErrNotExist) {
		// A run that never reached Finish leaves its stream under the
		// temporary name; recompute from it, and say so.
		if pf, perr := os.Open(path + partialSuffix); perr == nil {
			f, err, path, partial = pf, nil, path+partialSuffix, true
		}
	}
	if err != nil {
		return nil, "", reportSource{}, fmt.Errorf("report %s: %w (is this an agentperf or aiperf artifact folder?)", dir, err)
	}
	p, err := readExport(f, path, partial && EndsMidLine(path), opt.EachRecord)
	f.Close()
	if err != nil {
		return nil, "", reportSource{}, err
	}
	ovfPath := filepath.Join(dir, FileOverflow)
	if partial {
		ovfPath += partialSuffix
	}
	if err := p.countOverflows(ovfPath); err != nil {
		return nil, "", reportSource{}, fmt.Errorf("report %s: %w", filepath.Join(dir, FileOverflow), err)
	}
	info, version, slice, err := readRunInfo(dir, opt.Location, opt.Aggregate)
	if err != nil {
		return nil, "", reportSource{}, err
	}
	if partial {
		// A run that never reached Finish was cut short: it is never a
		// clean run, whatever the files say.
		info.Cancelled = true
		w := "recomputed from " + FileRecords + partialSuffix + ": the run did not finish, so its last records may be missing"
		if p.torn > 0 {
			w += "; its last line was cut mid-write and is left out"
		}
		// The warning of a failed write says the aggregates cover every
		// record; these, from the file, do not.
		info.Warnings = slices.DeleteFunc(info.Warnings, func(x string) bool { return strings.HasSuffix(x, WarnAggregatesCoverAll) })
		if !slices.Contains(info.Warnings, w) {
			info.Warnings = append(info.Warnings, w)
		}
	}
	unknownSent := info.Accounting.Sent == 0 && partial
	s := p.summary(info, slice)
	if unknownSent && s.AccountingErr == nil {
		s.AccountingErr = fmt.Errorf("%w: the run did not finish (only %s%s): how many requests it sent is not recorded, so the %d records cannot be checked against it",
			ErrAccounting, FileRecords, partialSuffix, s.Info.Accounting.Sent)
	}
	src := reportSource{partial: partial, existing: info.prevAccounting, existingAddsUp: info.prevAddsUp}
	return s, version, src, nil
}

// readRunInfo recovers the run context from the existing aggregate JSON
// of dir (ReadAggregateFile), which it gives to each when set. A missing
// file gives an empty RunInfo.
func readRunInfo(dir string, loc *time.Location, each func(*AggregateFile)) (RunInfo, string, time.Duration, error) {
	var info RunInfo
	version := "agentperf-dev"
	agg, err := ReadAggregateFile(dir)
	if errors.Is(err, os.ErrNotExist) {
		return info, version, 0, nil
	}
	if err != nil {
		return info, version, 0, fmt.Errorf("report: read the run context: %w; the file is left as it is: to recompute the aggregates from the records alone, move it aside (they then lack its run context: the number of requests sent is unknown, so the accounting cannot be checked)", err)
	}
	if each != nil {
		each(agg)
	}
	// Keep what Recompute does not regenerate: the top-level and metadata
	// keys the schema does not know.
	info.keepTop, info.keepMeta = agg.Extra, agg.Metadata.Extra
	md := &agg.Metadata
	info.Warnings = slices.Clone(md.Warnings) // summarize edits them; md is the caller's too (RecomputeOptions.Aggregate)
	if agg.AiperfVersion != "" {
		version = agg.AiperfVersion
	}
	info.BenchmarkID = agg.BenchmarkID
	info.InputConfig = agg.InputConfig
	info.Cancelled = agg.WasCancelled
	info.Scenario = md.Scenario
	info.Validity.Valid = md.SubmissionValid != nil && *md.SubmissionValid
	info.Validity.Reasons = md.SubmissionInvalidReasons
	info.Coverage = md.MetricDurationCoverage
	if md.Dataset != nil {
		d := json.NewDecoder(bytes.NewReader(md.Dataset))
		d.UseNumber()
		if err := d.Decode(&info.Dataset); err != nil {
			return info, version, 0, fmt.Errorf("report: read the run context: metadata.dataset: %w", err)
		}
	}
	info.SkippedSubagentRequests = md.SkippedSubagentRequests
	if ra := md.RequestAccounting; ra != nil {
		info.Accounting.Sent = ra.Sent
		info.prevAccounting, info.prevAddsUp = ra.Accounting, ra.AddsUp
	}
	var slice time.Duration
	extra := map[string]any{}
	nsTime := func(v any) time.Time {
		if i, ok := JSONInt(v); ok {
			return time.Unix(0, i)
		}
		return time.Time{}
	}
	for k, v := range md.Agentperf {
		switch k {
		case "profiling_start_ns":
			info.ProfilingStart = nsTime(v)
		case "profiling_end_ns":
			info.ProfilingEnd = nsTime(v)
		case "run_start_ns":
			info.StartTime = nsTime(v)
		case "run_end_ns":
			info.EndTime = nsTime(v)
		case "concurrency":
			if c, ok := JSONInt(v); ok {
				info.Concurrency = int(c)
			}
		case "slice_duration_sec":
			if f, ok := JSONFloat(v); ok {
				slice = time.Duration(math.Round(f * 1e9))
			}
		case "theoretical_prefix_cache_hit_definition", "warnings":
			// recomputed
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		info.Extra = extra
	}
	// Fall back to the naive local times when the ns values are absent
	// (an aiperf-written folder).
	if info.ProfilingStart.IsZero() && agg.StartTime != "" {
		if t, err := time.ParseInLocation("2006-01-02T15:04:05.999999", agg.StartTime, loc); err == nil {
			info.ProfilingStart = t
		}
	}
	if info.ProfilingEnd.IsZero() && agg.EndTime != "" {
		if t, err := time.ParseInLocation("2006-01-02T15:04:05.999999", agg.EndTime, loc); err == nil {
			info.ProfilingEnd = t
		}
	}
	return info, version, slice, nil
}

// JSONInt reads an integer of an open part of the aggregate JSON (a
// json.Number written as an integer after a decode, a Go integer when the
// caller filled it), exactly: timestamps in ns need all 64 bits.
func JSONInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	case int:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// JSONFloat reads a number of an open part of the aggregate JSON
// (InputConfig, metadata.agentperf …: a json.Number after a decode, a Go
// number when the caller filled it).
func JSONFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	}
	i, ok := JSONInt(v)
	return float64(i), ok
}

// AddWarnings appends warnings to metadata.warnings of the aggregate JSON
// in dir (written by Finish or Recompute), keeping everything else; a warning
// already recorded is not repeated. Use it
// for problems found after Finish, such as a plot that did not render.
func AddWarnings(dir string, warnings ...string) error {
	if len(warnings) == 0 {
		return nil
	}
	agg, err := ReadAggregateFile(dir)
	if err != nil {
		return fmt.Errorf("add warnings: %w", err)
	}
	for _, w := range warnings {
		if !slices.Contains(agg.Metadata.Warnings, w) {
			agg.Metadata.Warnings = append(agg.Metadata.Warnings, w)
		}
	}
	b, err := agg.Encode()
	if err != nil {
		return fmt.Errorf("add warnings to %s: %w", filepath.Join(dir, FileAggregateJSON), err)
	}
	return writeFileAtomic(dir, FileAggregateJSON, b)
}

// decodeOrdered decodes the next JSON value keeping the key order of
// objects (as obj) and numbers as json.Number.
func decodeOrdered(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := obj{}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeOrdered(d)
				if err != nil {
					return nil, err
				}
				o = append(o, kv{k, v})
			}
			_, err := d.Token()
			return o, err
		case '[':
			a := []any{}
			for d.More() {
				v, err := decodeOrdered(d)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := d.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case nil:
		return nilValue{}, nil
	}
	return tok, nil
}

// nilValue is an explicit JSON null kept by decodeOrdered.
type nilValue struct{}

// SetAgentperf sets metadata.agentperf[key] of dir's aggregate JSON to v
// (a figure computed after the aggregates were written, such as the GPU
// telemetry's energy per token) and rewrites the file atomically.
func SetAgentperf(dir, key string, v any) error {
	agg, err := ReadAggregateFile(dir)
	if err != nil {
		return fmt.Errorf("set metadata.agentperf.%s: %w", key, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("set metadata.agentperf.%s: %w", key, err)
	}
	var ordered any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if ordered, err = decodeOrdered(d); err != nil {
		return fmt.Errorf("set metadata.agentperf.%s: %w", key, err)
	}
	if agg.Metadata.Agentperf == nil {
		agg.Metadata.Agentperf = map[string]any{}
	}
	agg.Metadata.Agentperf[key] = ordered
	out, err := agg.Encode()
	if err != nil {
		return fmt.Errorf("set metadata.agentperf.%s in %s: %w", key, filepath.Join(dir, FileAggregateJSON), err)
	}
	return writeFileAtomic(dir, FileAggregateJSON, out)
}
