package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// req builds a minimal valid request row with the given extra fields.
func req(extra string) string {
	s := `{"t":1.5,"type":"n","model":"m","in":130,"out":7,"hash_ids":[0,1]`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// traceLine builds a one-line trace with the given requests array body.
func traceLine(id, requests string) string {
	return `{"id":"` + id + `","models":["m"],"block_size":64,"hash_id_scope":"local","tool_tokens":10,"system_tokens":5,"requests":[` + requests + `]}`
}

func readOne(t *testing.T, line string) Trace {
	t.Helper()
	tr, _, err := ReadJSONL(strings.NewReader(line), "x.jsonl", ReadOptions{})
	if err != nil {
		t.Fatalf("ReadJSONL: %v", err)
	}
	if len(tr) != 1 {
		t.Fatalf("got %d traces, want 1", len(tr))
	}
	return tr[0]
}

func TestReadJSONLFields(t *testing.T) {
	t.Parallel()
	line := `{"id":"demo","models":["opus","haiku"],"block_size":64,"hash_id_scope":"local","tool_tokens":12,"system_tokens":3,"requests":[` +
		`{"t":0.0,"type":"s","model":"opus","in":192,"out":48,"hash_ids":[0,1,2],"input_types":["text"],"output_types":["text","tool_use"],"stop":"tool_use","api_time":2.4,"think_time":null,"ttft":0.8},` +
		`{"t":9.0,"type":"subagent","agent_id":"agent_001","subagent_type":"Explore","duration_ms":3500,"total_tokens":152,"tool_use_count":1,"status":"completed","models":["haiku"],"tool_tokens":1,"system_tokens":2,"requests":[` +
		`{"t":0.5,"type":"n","model":"haiku","input_length":128,"output_length":24,"hash_ids":[0,5],"api_time":3.5,"think_time":0.6},` +
		`{"t":9.7,"type":"subagent","agent_id":"nested","duration_ms":null,"status":"async_launched","requests":[{"t":0.25,"type":"n","in":64,"out":1,"hash_ids":[9]}]}]},` +
		`{"t":15.0,"type":"n","model":"opus","in":448,"out":64,"hash_ids":[0,1,2,3,4,6,7],"stop":"end_turn","think_time":2.5}` +
		`],"totals":{"parent_tokens":{"input":1,"output":2},"subagent_count":1,"list":[1,"x",null,true,false,-1.5e3]}}`
	tr := readOne(t, line)
	if tr.ID != "demo" || tr.BlockSize != 64 || tr.ToolTokens != 12 || tr.SystemTokens != 3 || len(tr.Models) != 2 {
		t.Fatalf("trace header = %+v", tr)
	}
	if len(tr.Requests) != 2 || len(tr.Subagents) != 1 {
		t.Fatalf("got %d requests, %d subagents; want 2, 1", len(tr.Requests), len(tr.Subagents))
	}
	r0 := tr.Requests[0]
	if r0.Type != "s" || r0.In != 192 || r0.Out != 48 || r0.APITime != 2.4 || r0.TTFT != 0.8 || !math.IsNaN(r0.ThinkTime) {
		t.Errorf("request 0 = %+v", r0)
	}
	if got := tr.Requests[1]; !math.IsNaN(got.APITime) || !math.IsNaN(got.TTFT) || got.ThinkTime != 2.5 || got.Stop != "end_turn" {
		t.Errorf("request 1 = %+v (absent api_time/ttft must be NaN)", got)
	}
	s := tr.Subagents[0]
	if s.After != 1 || s.T != 9 || s.AgentID != "agent_001" || s.DurationMs != 3500 || s.TotalTokens != 152 || s.ToolUseCount != 1 || s.ToolTokens != 1 || s.SystemTokens != 2 {
		t.Errorf("subagent = %+v", s)
	}
	if len(s.Requests) != 1 || s.Requests[0].In != 128 || s.Requests[0].Out != 24 {
		t.Fatalf("subagent requests = %+v (input_length/output_length aliases)", s.Requests)
	}
	if s.Requests[0].T != 9.5 {
		t.Errorf("inner t = %v, want 9.5 (0.5 < entry t 9.0 is relative and shifted)", s.Requests[0].T)
	}
	if len(s.Subagents) != 1 {
		t.Fatalf("nested subagents = %d, want 1", len(s.Subagents))
	}
	n := s.Subagents[0]
	if n.After != 1 || !math.IsNaN(n.DurationMs) || n.T != 9.7 || n.Requests[0].T != 9.95 {
		t.Errorf("nested subagent = %+v (t 9.7 absolute; inner 0.25 relative → 9.95)", n)
	}
	if got := tr.NumSubagentRequests(); got != 2 {
		t.Errorf("NumSubagentRequests = %d, want 2", got)
	}
}

func TestReadJSONLAbsoluteInnerTimes(t *testing.T) {
	t.Parallel()
	tr := readOne(t, traceLine("a", req("")+`,{"t":100,"type":"subagent","requests":[`+strings.Replace(req(""), `"t":1.5`, `"t":100.5`, 1)+`]}`))
	if got := tr.Subagents[0].Requests[0].T; got != 100.5 {
		t.Errorf("absolute inner t = %v, want 100.5 unchanged", got)
	}
}

func TestReadJSONLStringsAndNumbers(t *testing.T) {
	t.Parallel()
	tr := readOne(t, traceLine(`a\"b\u00e9\ud83d\ude00\n`, `{"t":1e1,"type":"n","in":3.0,"out":0,"hash_ids":[ 4294967295 , 0 ],"stop":"","model":null}`))
	if tr.ID != "a\"bé😀\n" {
		t.Errorf("id = %q", tr.ID)
	}
	r := tr.Requests[0]
	if r.T != 10 || r.In != 3 || len(r.HashIDs) != 2 || r.HashIDs[0] != math.MaxUint32 {
		t.Errorf("request = %+v", r)
	}
}

func TestReadJSONLBlankLinesAndCRLF(t *testing.T) {
	t.Parallel()
	in := "\n" + traceLine("a", req("")) + "\r\n\n  \n" + traceLine("b", req("")) // no final newline
	tr, st, err := ReadJSONL(strings.NewReader(in), "x.jsonl", ReadOptions{})
	if err != nil || len(tr) != 2 || st.Traces != 2 {
		t.Fatalf("got %d traces, %+v, %v", len(tr), st, err)
	}
}

func TestReadJSONLLongLine(t *testing.T) {
	t.Parallel()
	// a line longer than the reader's buffer
	ids := make([]string, 400000)
	for i := range ids {
		ids[i] = "1234567"
	}
	line := traceLine("long", `{"t":0,"type":"n","in":1,"out":1,"hash_ids":[`+strings.Join(ids, ",")+`]}`) + "\n" + traceLine("b", req(""))
	tr, _, err := ReadJSONL(strings.NewReader(line), "x.jsonl", ReadOptions{})
	if err != nil || len(tr) != 2 || len(tr[0].Requests[0].HashIDs) != len(ids) {
		t.Fatalf("long line: %d traces, err %v", len(tr), err)
	}
}

// TestReadJSONLErrors has one case per error kind; each asserts the kind,
// the position and the field named in the message.
func TestReadJSONLErrors(t *testing.T) {
	t.Parallel()
	ok := traceLine("ok", req(""))
	cases := []struct {
		name       string
		line       string // placed on line 2, after a valid trace
		kind       error
		field      string
		request    int
		subrequest int
		msg        string
	}{
		{"syntax", `{"id":"x","requests":[` + req("") + `,}`, ErrMalformedJSON, "requests[1]", 1, -1, "expected"},
		{"truncated", `{"id":"x","requests":[{"t":1`, ErrMalformedJSON, "requests[0]", 0, -1, "end of input"},
		{"trailing garbage", traceLine("x", req("")) + ` {}`, ErrMalformedJSON, "", -1, -1, "after the trace object"},
		{"duplicate field", traceLine("x", req(`"out":3`)), ErrMalformedJSON, "requests[0]", 0, -1, `"out" appears twice`},
		{"in and alias", traceLine("x", req(`"input_length":3`)), ErrMalformedJSON, "requests[0]", 0, -1, "alias"},
		{"unknown trace field", `{"id":"x","requests":[` + req("") + `],"extra":1}`, ErrUnknownField, "", -1, -1, `"extra"`},
		{"unknown request field", traceLine("x", req(`"cache_read":5`)), ErrUnknownField, "requests[0]", 0, -1, `"cache_read"`},
		{"request field in subagent", traceLine("x", req("")+`,{"t":2,"type":"subagent","in":5,"requests":[]}`), ErrUnknownField, "requests[1]", 1, -1, `"in" is not allowed in a "subagent" entry`},
		{"missing id", `{"requests":[` + req("") + `]}`, ErrMissingField, "", -1, -1, `"id"`},
		{"missing requests", `{"id":"x"}`, ErrMissingField, "", -1, -1, `"requests"`},
		{"missing out", traceLine("x", `{"t":1,"type":"n","in":1,"hash_ids":[]}`), ErrMissingField, "requests[0]", 0, -1, `"out"`},
		{"missing type", traceLine("x", `{"t":1,"in":1,"out":1,"hash_ids":[]}`), ErrMissingField, "requests[0]", 0, -1, `"type"`},
		{"missing inner hash_ids", traceLine("x", req("")+`,{"t":2,"type":"subagent","requests":[{"t":1,"type":"n","in":1,"out":1}]}`), ErrMissingField, "requests[1].requests[0]", 1, 0, `"hash_ids"`},
		{"wrong type string", traceLine("x", req(`"stop":5`)), ErrWrongType, "requests[0].stop", 0, -1, "expected a string"},
		{"wrong type number", traceLine("x", strings.Replace(req(""), `"in":130`, `"in":"130"`, 1)), ErrWrongType, "requests[0].in", 0, -1, "expected a number"},
		{"trace not object", `[1,2]`, ErrWrongType, "", -1, -1, "a trace"},
		{"negative out", traceLine("x", strings.Replace(req(""), `"out":7`, `"out":-7`, 1)), ErrOutOfRange, "requests[0].out", 0, -1, "≥ 0"},
		{"negative tool_tokens", `{"id":"x","tool_tokens":-1,"requests":[` + req("") + `]}`, ErrOutOfRange, "tool_tokens", -1, -1, "≥ 0"},
		{"fractional in", traceLine("x", strings.Replace(req(""), `"in":130`, `"in":1.5`, 1)), ErrOutOfRange, "requests[0].in", 0, -1, "expected an integer"},
		{"negative hash id", traceLine("x", strings.Replace(req(""), `[0,1]`, `[0,-1]`, 1)), ErrOutOfRange, "requests[0].hash_ids[1]", 0, -1, "negative"},
		{"hash id over 32 bits", traceLine("x", strings.Replace(req(""), `[0,1]`, `[0,1,4294967296]`, 1)), ErrOutOfRange, "requests[0].hash_ids[2]", 0, -1, "exceeds 2^32-1"},
		{"inner hash id over 32 bits", traceLine("x", req("")+`,{"t":2,"type":"subagent","requests":[`+req("")+`,`+strings.Replace(req(""), `[0,1]`, `[99999999999]`, 1)+`]}`), ErrOutOfRange, "requests[1].requests[1].hash_ids[0]", 1, 1, "exceeds 2^32-1"},
		{"bad type value", traceLine("x", strings.Replace(req(""), `"type":"n"`, `"type":"x"`, 1)), ErrOutOfRange, "requests[0].type", 0, -1, `"n", "s" or "subagent"`},
		{"negative think_time", traceLine("x", req(`"think_time":-1`)), ErrOutOfRange, "requests[0].think_time", 0, -1, "≥ 0"},
		{"empty id", traceLine("", req("")), ErrOutOfRange, "id", -1, -1, "empty"},
		{"hash_id_scope global", `{"id":"x","hash_id_scope":"global","requests":[` + req("") + `]}`, ErrHashIDScope, "hash_id_scope", -1, -1, `"local"`},
		{"block_size zero", `{"id":"x","block_size":0,"requests":[` + req("") + `]}`, ErrBlockSize, "block_size", -1, -1, "positive"},
		{"block_size negative", `{"id":"x","block_size":-64,"requests":[` + req("") + `]}`, ErrBlockSize, "block_size", -1, -1, "positive"},
		{"no parent requests", traceLine("x", `{"t":2,"type":"subagent","requests":[]}`), ErrEmptyTrace, "requests", -1, -1, "at least one"},
		{"duplicate trace id", ok, ErrDuplicateTraceID, "id", -1, -1, "line 1"},
		{"invalid utf8", traceLine("x\xff", req("")), ErrMalformedJSON, "id", -1, -1, "UTF-8"},
		{"control char", traceLine("x\x01", req("")), ErrMalformedJSON, "id", -1, -1, "control character"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := ok + "\n" + tc.line + "\n"
			_, _, err := ReadJSONL(strings.NewReader(in), "corpus.jsonl", ReadOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("error %v is not %v", err, tc.kind)
			}
			var te *TraceError
			if !errors.As(err, &te) {
				t.Fatalf("error %T is not a *TraceError", err)
			}
			if te.File != "corpus.jsonl" || te.Line != 2 {
				t.Errorf("position %s:%d, want corpus.jsonl:2", te.File, te.Line)
			}
			if te.Field != tc.field || te.Request != tc.request || te.Subrequest != tc.subrequest {
				t.Errorf("field %q request %d subrequest %d, want %q %d %d", te.Field, te.Request, te.Subrequest, tc.field, tc.request, tc.subrequest)
			}
			msg := err.Error()
			for _, want := range []string{"corpus.jsonl:2", tc.field, tc.msg} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
			// with SkipInvalid the bad line is skipped and counted
			tr, st, err := ReadJSONL(strings.NewReader(in+traceLine("after", req(""))), "corpus.jsonl", ReadOptions{SkipInvalid: true})
			if err != nil || len(tr) != 2 || st.Skipped != 1 || len(st.Errors) != 1 || tr[1].ID != "after" {
				t.Errorf("SkipInvalid: %d traces, %+v, %v", len(tr), st, err)
			}
		})
	}
}

func TestReadJSONLErrorMessage(t *testing.T) {
	t.Parallel()
	line := traceLine("t1", req("")+","+strings.Replace(req(""), `"out":7`, `"out":-2`, 1))
	_, _, err := ReadJSONL(strings.NewReader(line), "traces.jsonl", ReadOptions{})
	want := fmt.Sprintf(`traces.jsonl:1 (byte %d): trace "t1": requests[1].out: value out of range: expected a count ≥ 0, got -2`, strings.Index(line, "-2"))
	if err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
}

func TestReadJSONLSkipInvalidKeepsFirstErrors(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; i < 25; i++ {
		b.WriteString("{broken\n")
	}
	b.WriteString(traceLine("good", req("")))
	tr, st, err := ReadJSONL(strings.NewReader(b.String()), "x", ReadOptions{SkipInvalid: true})
	if err != nil || len(tr) != 1 || st.Skipped != 25 || len(st.Errors) != maxSkipErrors {
		t.Fatalf("got %d traces, skipped %d, %d errors, err %v", len(tr), st.Skipped, len(st.Errors), err)
	}
}

func TestReadTraceJSONPrettyPrinted(t *testing.T) {
	t.Parallel()
	data := []byte("{\n  \"id\": \"p\",\n  \"requests\": [\n    {\"t\": 0, \"type\": \"n\", \"in\": 64, \"out\": 1,\n     \"hash_ids\": [1, -2]}\n  ]\n}\n")
	_, err := ReadTraceJSON(data, "trace_0001.json")
	var te *TraceError
	if !errors.As(err, &te) || te.File != "trace_0001.json" || te.Line != 5 || te.Field != "requests[0].hash_ids[1]" {
		t.Fatalf("error %v, want trace_0001.json line 5 at requests[0].hash_ids[1]", err)
	}
	tr, err := ReadTraceJSON(bytes.Replace(data, []byte("-2"), []byte("2"), 1), "trace_0001.json")
	if err != nil || tr.ID != "p" || len(tr.Requests[0].HashIDs) != 2 {
		t.Fatalf("ReadTraceJSON: %+v, %v", tr, err)
	}
}

func writeFile(t *testing.T, path string, data []byte, comp string) {
	t.Helper()
	var buf bytes.Buffer
	switch comp {
	case "gz":
		w := gzip.NewWriter(&buf)
		w.Write(data)
		w.Close()
	case "zst":
		w, _ := zstd.NewWriter(&buf)
		w.Write(data)
		w.Close()
	default:
		buf.Write(data)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadPathLayouts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jsonl := []byte(traceLine("a", req("")) + "\n" + traceLine("b", req("")) + "\n")
	for _, c := range []string{"", "gz", "zst"} {
		name := "traces.jsonl"
		if c != "" {
			name += "." + c
		}
		writeFile(t, filepath.Join(dir, name), jsonl, c)
	}
	traceDir := filepath.Join(dir, "traces")
	os.Mkdir(traceDir, 0o755)
	writeFile(t, filepath.Join(traceDir, "t2.json.gz"), []byte(traceLine("t2", req(""))), "gz")
	writeFile(t, filepath.Join(traceDir, "t1.json"), []byte(traceLine("t1", req(""))), "")
	writeFile(t, filepath.Join(traceDir, "t3.json.zst"), []byte(traceLine("t3", req(""))), "zst")
	writeFile(t, filepath.Join(traceDir, "README.md"), []byte("not a trace"), "")
	writeFile(t, filepath.Join(dir, "multi.json"), []byte(traceLine("m1", req(""))+"\n\n"+traceLine("m2", req(""))), "")

	for _, tc := range []struct {
		path string
		ids  []string
	}{
		{"traces.jsonl", []string{"a", "b"}},
		{"traces.jsonl.gz", []string{"a", "b"}},
		{"traces.jsonl.zst", []string{"a", "b"}},
		{"traces", []string{"t1", "t2", "t3"}},
		{"multi.json", []string{"m1", "m2"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			tr, st, err := ReadPath(filepath.Join(dir, tc.path), ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, x := range tr {
				ids = append(ids, x.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.ids, ",") || st.Traces != len(tc.ids) {
				t.Errorf("ids %v, want %v", ids, tc.ids)
			}
		})
	}

	t.Run("duplicate across files", func(t *testing.T) {
		d := filepath.Join(dir, "dup")
		os.Mkdir(d, 0o755)
		writeFile(t, filepath.Join(d, "a.json"), []byte(traceLine("same", req(""))), "")
		writeFile(t, filepath.Join(d, "b.json"), []byte(traceLine("same", req(""))), "")
		_, _, err := ReadPath(d, ReadOptions{})
		if !errors.Is(err, ErrDuplicateTraceID) || !strings.Contains(err.Error(), "b.json") || !strings.Contains(err.Error(), "a.json") {
			t.Errorf("error %v, want a duplicate naming both files", err)
		}
	})
	t.Run("unknown extension", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "x.csv"), []byte("a,b"), "")
		if _, _, err := ReadPath(filepath.Join(dir, "x.csv"), ReadOptions{}); err == nil || !strings.Contains(err.Error(), ".jsonl") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, _, err := ReadPath(filepath.Join(dir, "nope.jsonl"), ReadOptions{}); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error %v, want ErrNotExist", err)
		}
	})
	t.Run("corrupt zstd", func(t *testing.T) {
		p := filepath.Join(dir, "bad.jsonl.zst")
		os.WriteFile(p, []byte("\x28\xb5\x2f\xfd garbage garbage"), 0o644)
		_, _, err := ReadPath(p, ReadOptions{SkipInvalid: true})
		if err == nil || !strings.Contains(err.Error(), "bad.jsonl.zst") {
			t.Errorf("error %v, want a decompression error naming the file (never skipped)", err)
		}
	})
	t.Run("empty dir", func(t *testing.T) {
		d := filepath.Join(dir, "empty")
		os.Mkdir(d, 0o755)
		if _, _, err := ReadPath(d, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "no *.json") {
			t.Errorf("error %v", err)
		}
	})
}

func TestReadHashIDForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ids  string
		want []uint32
		err  error
	}{
		{`[]`, []uint32{}, nil},
		{`[0]`, []uint32{0}, nil},
		{`[ 1 ,	2 ,3 ]`, []uint32{1, 2, 3}, nil},
		{`[4294967295,7]`, []uint32{math.MaxUint32, 7}, nil},
		{`[1e2,2.0]`, []uint32{100, 2}, nil},
		{`[-0]`, []uint32{0}, nil},
		{`[00]`, nil, ErrMalformedJSON},
		{`[1,]`, nil, ErrMalformedJSON},
		{`[1 2]`, nil, ErrMalformedJSON},
		{`[1`, nil, ErrMalformedJSON},
		{`[1.5]`, nil, ErrOutOfRange},
		{`[12345678901]`, nil, ErrOutOfRange},
		{`[4294967296]`, nil, ErrOutOfRange},
		{`["1"]`, nil, ErrWrongType},
		{`{}`, nil, ErrWrongType},
		{`null`, nil, ErrWrongType},
	} {
		line := traceLine("x", strings.Replace(req(""), `[0,1]`, tc.ids, 1))
		tr, _, err := ReadJSONL(strings.NewReader(line), "x.jsonl", ReadOptions{})
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: error %v, want %v", tc.ids, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.ids, err)
			continue
		}
		got := tr[0].Requests[0].HashIDs
		if len(got) != len(tc.want) || got == nil {
			t.Errorf("%s: got %v, want %v", tc.ids, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: got %v, want %v", tc.ids, got, tc.want)
			}
		}
	}
}

// TestReadSharedHashIDStorage checks that turns extending the previous
// turn share storage without one turn's ids leaking into another's.
func TestReadSharedHashIDStorage(t *testing.T) {
	t.Parallel()
	r := func(ids string) string { return strings.Replace(req(""), `[0,1]`, ids, 1) }
	tr := readOne(t, traceLine("x", r(`[1,2]`)+","+r(`[1,2,3,4]`)+","+r(`[1,2,3,4]`)+","+r(`[1,9]`)+","+r(`[1,9,10]`)+","+
		`{"t":2,"type":"subagent","requests":[`+r(`[1,9,10,11]`)+`]},`+r(`[1,9,10,11,12]`)))
	want := [][]uint32{{1, 2}, {1, 2, 3, 4}, {1, 2, 3, 4}, {1, 9}, {1, 9, 10}, {1, 9, 10, 11, 12}}
	for i, w := range want {
		got := tr.Requests[i].HashIDs
		if len(got) != len(w) || cap(got) != len(w) {
			t.Fatalf("request %d: %v (cap %d), want %v", i, got, cap(got), w)
		}
		for j := range w {
			if got[j] != w[j] {
				t.Fatalf("request %d: %v, want %v", i, got, w)
			}
		}
	}
	if s := tr.Subagents[0].Requests[0].HashIDs; len(s) != 4 || s[3] != 11 {
		t.Errorf("subagent ids %v", s)
	}
	// storage is shared (the point of the exercise) ...
	if &tr.Requests[0].HashIDs[0] != &tr.Requests[1].HashIDs[0] {
		t.Error("request 1 does not share request 0's storage")
	}
	// ... but appending to one request's ids never changes another's
	_ = append(tr.Requests[0].HashIDs, 99)
	if tr.Requests[1].HashIDs[2] != 3 {
		t.Error("append to request 0 clobbered request 1")
	}
}
