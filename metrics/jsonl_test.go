package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestAppendFloatPythonRepr: floats are written as Python's repr writes
// them, so files match aiperf's.
func TestAppendFloatPythonRepr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		f    float64
		want string
	}{
		{3300, "3300.0"}, {0, "0.0"}, {0.1, "0.1"}, {8.025, "8.025"}, {-2.5, "-2.5"},
		{1e-5, "1e-05"}, {0.0001, "0.0001"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
		{1.5e20, "1.5e+20"}, {98.03921568627452, "98.03921568627452"}, {1.0 / 3, "0.3333333333333333"},
	}
	for _, c := range cases {
		if got := string(appendFloat(nil, c.f)); got != c.want {
			t.Errorf("appendFloat(%v) = %s, want %s", c.f, got, c.want)
		}
	}
	if got := string(appendNumber(nil, 550, true)); got != "550" {
		t.Errorf("int metric written as %s", got)
	}
}

// TestAppendStringRoundTrip: every string, valid UTF-8 or not, encodes to
// a JSON string that decodes to the same text (invalid bytes → U+FFFD).
func TestAppendStringRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "ctl \x00\x01\x1f\t\r\n", "ünïcode ✓ 🚀",
		"\u2028\u2029", "<html>&amp;", "bad \xff\xfe utf8"} {
		b := appendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("appendString(%q) = %s: %v", s, b, err)
		}
		// One U+FFFD per invalid byte (Python's "replace" does the same).
		want := strings.ReplaceAll(s, "\xff", "\ufffd")
		want = strings.ReplaceAll(want, "\xfe", "\ufffd")
		if got != want {
			t.Errorf("round trip of %q gave %q", s, got)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00", "\xff", "✓", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("appendString(%q) = %s is not JSON: %v", s, b, err)
		}
		if want := strings.ToValidUTF8(s, "\ufffd"); got != want {
			// ToValidUTF8 collapses runs of invalid bytes into one U+FFFD;
			// appendString writes one per byte, like Python's "replace".
			if strings.ReplaceAll(got, "\ufffd", "") != strings.ReplaceAll(want, "\ufffd", "") {
				t.Fatalf("round trip of %q gave %q", s, got)
			}
		}
	})
}

// TestRecordLineEdgeCases: odd records still give one valid JSON line.
func TestRecordLineEdgeCases(t *testing.T) {
	t.Parallel()
	cases := map[string]*Record{
		"zero record": {},
		"odd strings": {XRequestID: "\"\n\\", ConversationID: "trace\x00::sa:\xff", WorkerID: "w\u2028",
			Error: &Error{Message: strings.Repeat("é", 1000) + "\"}{", Type: "T\"", Code: 500}},
		"huge values": {RequestStartNs: 1, FirstChunkNs: math.MaxInt64 / 2, LastChunkNs: math.MaxInt64 / 2, RequestEndNs: math.MaxInt64,
			Usage: &Usage{PromptTokens: math.MaxInt32, CompletionTokens: 2}},
		"cancelled without error": {Cancelled: true, CancellationNs: 5},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			v := Compute(r)
			line := appendRecordLine(nil, r, &v, "p")
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
				t.Fatalf("not one line: %q", line)
			}
			decodeJSON(t, line)
			var l RecordLine
			if err := DecodeRecordLine(bytes.TrimSpace(line), &l); err != nil {
				t.Fatalf("our reader rejects our line: %v\n%s", err, line)
			}
		})
	}
}

// TestReadExportErrors: the reader names the line of a malformed record.
func TestReadExportErrors(t *testing.T) {
	t.Parallel()
	good := `{"metadata":{"request_start_ns":1,"request_end_ns":2,"benchmark_phase":"profiling"},"metrics":{"time_to_first_token":5}}`
	cases := []struct {
		name, in, want string
	}{
		{"not json", good + "\n{oops\n", ":2:"},
		{"bad phase", good + "\n\n" + `{"metadata":{"benchmark_phase":"cooldown"},"metrics":{}}`, ":3: metadata.benchmark_phase"},
		{"metric not a number", `{"metadata":{},"metrics":{"request_latency":{"value":"fast","unit":"ms"}}}`, ":1: metrics.request_latency"},
		{"blocks out of range", `{"metadata":{"theoretical_hit_blocks":5,"theoretical_total_blocks":4},"metrics":{}}`, ":1: metadata.theoretical_hit_blocks"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readExport(strings.NewReader(c.in), "x.jsonl", false, nil)
			if err == nil || !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("readExport error %v, want ErrBadExport containing %q", err, c.want)
			}
		})
	}
	p, err := readExport(strings.NewReader(good+"\n"), "x.jsonl", false, nil)
	if err != nil || p.rows.len() != 1 || p.rows.row(0).v.TTFT != 5 || p.counts.Counts().Profiling.OK != 1 {
		t.Fatalf("bare-number metric: %v %+v", err, p)
	}
}

// FuzzReadExport: the profile_export.jsonl reader used by Recompute never
// panics, and what it accepts is counted consistently.
func FuzzReadExport(f *testing.F) {
	recs, ovf := fixtureRecords()
	for _, r := range append(recs, ovf) {
		v := Compute(r)
		f.Add(appendRecordLine(nil, r, &v, "p"))
	}
	f.Add([]byte(`{"metadata":{},"metrics":{"x":[1,2]},"error":{"code":"E1"}}`))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"metrics":{"request_latency":{"value":1e400}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := readExport(bytes.NewReader(data), "fuzz.jsonl", len(data) > 0 && data[len(data)-1] != '\n', nil)
		if err != nil {
			if !errors.Is(err, ErrBadExport) {
				t.Fatalf("error does not wrap ErrBadExport: %v", err)
			}
			return
		}
		// Every record is in one bucket; every one but an overflow has a row.
		if acct := p.counts.Counts().Accounting(); acct.Total()-acct.Overflows != p.rows.len() {
			t.Fatalf("accounting %+v for %d rows", acct, p.rows.len())
		}
		// Whatever was read aggregates and renders without panicking.
		s := aggregate(&p.rows, overflowCounts{}, p.errs.list(), RunInfo{}, 0)
		if _, err := s.aggregateJSON(exportOptions{version: "x", location: time.UTC}); err != nil {
			t.Fatal(err)
		}
		s.aggregateCSV()
	})
}

func TestIsSecretKey(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]bool{
		"api_key": true, "API-Key": true, "openai_api_key": true, "Authorization": true, "client_secret": true,
		"token": true, "hf_token": true, "HF_TOKEN": true, "access-token": true, "bearer": true, "password": true,
		"apitoken":  true,
		"tokenizer": false, "max_tokens": false, "use_server_token_count": false, "tokens": false,
		"synthesis_max_osl": false, "url": false, "model": false, "tokenizer_trust_remote_code": false,
	} {
		if got := isSecretKey(k); got != want {
			t.Errorf("isSecretKey(%q) = %v, want %v", k, got, want)
		}
	}
	got := redact(map[string]any{"endpoint": map[string]any{"headers": []any{map[string]any{"x-api-key": "k"}}, "api_key": ""}})
	ep := got.(map[string]any)["endpoint"].(map[string]any)
	if ep["headers"].([]any)[0].(map[string]any)["x-api-key"] != redactedPlaceholder || ep["api_key"] != "" {
		t.Errorf("nested redaction: %v", got)
	}
}
