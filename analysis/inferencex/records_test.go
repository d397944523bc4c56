package inferencex

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/metrics"
)

// TestErrorCategory: a record has failed when its error is present and not
// null, false, 0, "", [] or {}, and is counted under the category
// InferenceX's processor gives it.
func TestErrorCategory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		raw     string
		errored bool
		cat     string
	}{
		{``, false, ""}, {`null`, false, ""}, {`{}`, false, ""}, {`""`, false, ""}, {`false`, false, ""}, {`[]`, false, ""},
		{`{"type":"HTTPStatusError","message":"500 server error"}`, true, "HTTPStatusError"},
		{`{"code":503,"message":"x"}`, true, "503"},
		{`{"type":"","error_type":"Timeout"}`, true, "Timeout"},
		{`{"status":"aborted"}`, true, "aborted"},
		{`{"message":"connection reset: by peer\nsecond line"}`, true, "connection reset"},
		{`{"error":"boom"}`, true, "boom"},
		{`{"message":""}`, true, "unknown"},
		{`"plain text failure: detail"`, true, "plain text failure"},
		{`{"message":"` + strings.Repeat("é", 200) + `"}`, true, strings.Repeat("é", 120)},
	}
	for _, c := range cases {
		line := `{"metadata":{"request_start_ns":1,"request_end_ns":2},"metrics":{}}`
		if c.raw != "" {
			line = `{"metadata":{"request_start_ns":1,"request_end_ns":2},"metrics":{},"error":` + c.raw + `}`
		}
		rs, err := readRecords(strings.NewReader(line), "x.jsonl", false)
		if err != nil || (rs.Errored == 1) != c.errored || c.errored && rs.Categories[c.cat] != 1 {
			t.Errorf("error %s: %v, errored %d, categories %v; want errored %v under %q", c.raw, err, rs.Errored, rs.Categories, c.errored, c.cat)
		}
	}
}

// TestReadRecordsCountsEveryLine: warmup and failed records are counted,
// never lost; a record without a phase is profiling; a malformed line
// names its line number.
func TestReadRecordsCountsEveryLine(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"metadata":{"request_start_ns":1,"request_end_ns":2},"metrics":{"time_to_first_token":5,"input_sequence_length":{"value":10,"unit":"tokens"},"output_sequence_length":3}}`,
		``,
		`{"metadata":{"benchmark_phase":"warmup","request_start_ns":1,"request_end_ns":2},"metrics":{}}`,
		`{"metadata":{"request_start_ns":1,"request_end_ns":2,"benchmark_phase":"profiling"},"metrics":{},"error":{"type":"X"}}`,
		`{"metadata":{"benchmark_phase":"profiling","request_start_ns":3,"request_end_ns":4},"metrics":{"inter_chunk_latency":{"value":[1,2],"unit":"ms"}}}`,
	}, "\n")
	rs, err := readRecords(strings.NewReader(in), "x.jsonl", false)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Total != 4 || rs.Warmup != 1 || rs.Profiling != 3 || rs.Errored != 1 || len(rs.kept) != 2 || rs.MissingTokens != 1 {
		t.Errorf("total %d warmup %d profiling %d errored %d kept %d missing tokens %d; want 4 1 3 1 2 1",
			rs.Total, rs.Warmup, rs.Profiling, rs.Errored, len(rs.kept), rs.MissingTokens)
	}
	if rs.kept[0].ttftMs != 5 || rs.kept[0].isl != 10 || rs.kept[0].osl != 3 {
		t.Errorf("first record %+v", rs.kept[0])
	}
	_, err = readRecords(strings.NewReader(in+"\n{\"metadata\":"), "x.jsonl", false)
	if !errors.Is(err, ErrBadRecords) || !strings.Contains(err.Error(), "x.jsonl:6") {
		t.Errorf("malformed line: %v", err)
	}
	// A .partial file cut mid-write: the torn last line is left out, the
	// rest is read; a malformed line before the last is still an error.
	rs, err = readRecords(strings.NewReader(in+"\n{\"metadata\":"), "x.jsonl.partial", true)
	if err != nil || rs.Total != 4 {
		t.Errorf("torn last line of a partial file: %v (%d records, want 4)", err, rs.Total)
	}
	_, err = readRecords(strings.NewReader("{\"metadata\":\n"+in), "x.jsonl.partial", true)
	if !errors.Is(err, ErrBadRecords) || !strings.Contains(err.Error(), "x.jsonl.partial:1") {
		t.Errorf("malformed first line of a torn file: %v", err)
	}
	_, err = readRecords(strings.NewReader(`{"metadata":{},"metrics":{"request_latency":{"value":"fast"}}}`), "y.jsonl", false)
	if !errors.Is(err, ErrBadRecords) || !strings.Contains(err.Error(), "metrics.request_latency") {
		t.Errorf("bad metric value: %v", err)
	}
}

// FuzzReadRecords: any input either parses or is an ErrBadRecords error;
// when it parses, every record is in exactly the counts it belongs to.
func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(`{"metadata":{"benchmark_phase":"profiling","request_start_ns":1,"request_end_ns":2},"metrics":{"time_to_first_token":{"value":5,"unit":"ms"}}}` + "\n"))
	f.Add([]byte(`{"metadata":{"benchmark_phase":"warmup"},"metrics":{},"error":{"code":500}}` + "\n\n" + `{"metadata":{},"metrics":{"output_sequence_length":1e400}}`))
	f.Add([]byte(`{"metadata":{"recorded_output_tokens":3.5,"theoretical_hit_blocks":9,"theoretical_total_blocks":2},"metrics":{},"error":"x:y"}`))
	f.Add([]byte("not json\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := readRecords(strings.NewReader(string(b)), "fuzz.jsonl", false)
		if err != nil {
			if !errors.Is(err, ErrBadRecords) {
				t.Fatalf("error does not wrap ErrBadRecords: %v", err)
			}
			return
		}
		if rs.Warmup+rs.Profiling != rs.Total || len(rs.kept) > rs.Profiling || rs.Errored > rs.Total {
			t.Fatalf("counts: total %d warmup %d profiling %d errored %d kept %d", rs.Total, rs.Warmup, rs.Profiling, rs.Errored, len(rs.kept))
		}
		n := 0
		for _, c := range rs.Categories {
			n += c
		}
		if n != rs.Errored || len(rs.kept)+rs.Errored < rs.Profiling {
			t.Fatalf("categories %d, errored %d, kept %d, profiling %d", n, rs.Errored, len(rs.kept), rs.Profiling)
		}
		for _, r := range rs.kept {
			if r.total < 0 || r.hit > r.total {
				t.Fatalf("blocks %d/%d", r.hit, r.total)
			}
		}
	})
}

// readRecords reads a record stream as Load does (metrics.ReadRecords,
// records.add), for the tests of the counts.
func readRecords(r io.Reader, name string, tornTail bool) (*records, error) {
	rs := newRecords()
	if _, err := metrics.ReadRecords(r, name, tornTail, func(l *metrics.RecordLine) error {
		rs.add(l)
		return nil
	}); err != nil {
		return nil, err
	}
	return rs, nil
}

// TestRecordsFollowTheBucket: the kept records are those the tally counts
// as profiling successes (metrics.BucketOf). A profiling record flagged
// was_cancelled or context_overflow_skip without an error object used to
// be kept (only the error object was read); it is now dropped, counted
// among the errored records under its bucket's name.
func TestRecordsFollowTheBucket(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ line, cat string }{
		{`{"metadata":{"benchmark_phase":"profiling","was_cancelled":true,"request_start_ns":1,"request_end_ns":2},"metrics":{"time_to_first_token":5}}`, "cancelled"},
		{`{"metadata":{"benchmark_phase":"profiling","context_overflow_skip":true,"request_start_ns":1,"request_end_ns":2},"metrics":{"time_to_first_token":5}}`, "context_overflows"},
		{`{"metadata":{"request_end_ns":2,"request_start_ns":1,"benchmark_phase":"profiling","was_cancelled":true},"metrics":{},"error":{"type":"cancelled"}}`, "cancelled"},
	} {
		rs, err := readRecords(strings.NewReader(c.line), "x.jsonl", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs.kept) != 0 || rs.Errored != 1 || rs.Categories[c.cat] != 1 || rs.Profiling != 1 {
			t.Errorf("%s: kept %d, errored %d, categories %v; want dropped, 1 errored under %q", c.line, len(rs.kept), rs.Errored, rs.Categories, c.cat)
		}
	}
}
