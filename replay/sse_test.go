package replay

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseSSELine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name               string
		line               string
		ok                 bool
		content, reasoning bool
		done, isErr, usage bool
		prompt, completion int
		cached             int
		malformed          bool
	}{
		{name: "comment", line: ": keep-alive", ok: false},
		{name: "event name", line: "event: message", ok: false},
		{name: "blank data", line: "data:", ok: false},
		{name: "done", line: "data: [DONE]", ok: true, done: true},
		{name: "content", line: `data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hello"}}]}`, ok: true, content: true},
		{name: "no space after colon", line: `data:{"choices":[{"delta":{"content":"Hi"}}]}`, ok: true, content: true},
		{name: "empty content", line: `data: {"choices":[{"delta":{"content":""}}]}`, ok: true},
		{name: "role only", line: `data: {"choices":[{"delta":{"role":"assistant","content":null}}]}`, ok: true},
		{name: "reasoning_content", line: `data: {"choices":[{"delta":{"reasoning_content":"think"}}]}`, ok: true, reasoning: true},
		{name: "reasoning", line: `data: {"choices":[{"delta":{"reasoning":"think"}}]}`, ok: true, reasoning: true},
		{name: "usage", line: `data: {"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":7,"total_tokens":127,"prompt_tokens_details":{"cached_tokens":64}}}`,
			ok: true, usage: true, prompt: 120, completion: 7, cached: 64},
		{name: "usage null", line: `data: {"choices":[{"delta":{"content":"a"}}],"usage":null}`, ok: true, content: true},
		{name: "error event", line: `data: {"error":{"message":"boom","type":"InternalServerError","code":500}}`, ok: true, isErr: true},
		{name: "escaped quote content", line: `data: {"choices":[{"delta":{"content":"\"q\""}}]}`, ok: true, content: true},
		{name: "not json", line: `data: {"choices":[{"delta":{"content":"x"}}`, ok: true, malformed: true},
		{name: "not object", line: `data: hello`, ok: true, malformed: true},
		{name: "completions text", line: `data: {"choices":[{"text":"abc"}]}`, ok: true, content: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, ok, err := parseSSELine([]byte(tc.line), nil)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if tc.malformed != (err != nil) {
				t.Fatalf("err = %v, want malformed=%v", err, tc.malformed)
			}
			if err != nil && !errors.Is(err, errMalformed) {
				t.Fatalf("err %v does not wrap errMalformed", err)
			}
			if ev.Content != tc.content || ev.Reasoning != tc.reasoning || ev.Done != tc.done || (ev.ErrorMessage != nil) != tc.isErr || ev.HasUsage != tc.usage {
				t.Fatalf("event = %+v", ev)
			}
			if tc.usage && (ev.Usage.PromptTokens != tc.prompt || ev.Usage.CompletionTokens != tc.completion || ev.Usage.CachedTokens != tc.cached || !ev.Usage.HasCached) {
				t.Fatalf("usage = %+v", ev.Usage)
			}
		})
	}
}

func TestParseSSELineCollectsLiveText(t *testing.T) {
	t.Parallel()
	var text []byte
	for _, l := range []string{
		`data: {"choices":[{"delta":{"content":"Hel"}}]}`,
		`data: {"choices":[{"delta":{"content":"lo \"w\"\n"}}]}`,
	} {
		if _, _, err := parseSSELine([]byte(l), &text); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := string(text), "Hello \"w\"\n"; got != want {
		t.Fatalf("text = %q, want %q", got, want)
	}
}

func TestLineReaderSplitsAcrossReads(t *testing.T) {
	t.Parallel()
	in := "data: a\r\n\r\ndata: " + strings.Repeat("b", 100000) + "\n: c\ndata: last"
	var lr lineReader
	lr.reset(iotest.OneByteReader(strings.NewReader(in)))
	var got []string
	for {
		l, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(l))
	}
	want := []string{"data: a", "", "data: " + strings.Repeat("b", 100000), ": c", "data: last"}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("line %d = %.40q, want %.40q", i, got[i], want[i])
		}
	}
}

func TestLineReaderRejectsHugeLine(t *testing.T) {
	t.Parallel()
	var lr lineReader
	lr.reset(io.MultiReader(strings.NewReader("data: "), bytes.NewReader(bytes.Repeat([]byte("x"), maxSSELine+10))))
	_, err := lr.next()
	if !errors.Is(err, errMalformed) {
		t.Fatalf("err = %v, want errMalformed", err)
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`{"object":"error","message":"This model's maximum context length is 8 tokens.","type":"BadRequestError","code":400}`: "This model's maximum context length is 8 tokens.",
		`{"error":{"message":"nested msg","type":"x"}}`:                                                                       "nested msg",
		`{"error":"flat string"}`: "flat string",
		`plain text body`:         "plain text body",
	}
	for in, want := range cases {
		if got := errorMessage([]byte(in)); got != want {
			t.Errorf("errorMessage(%s) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseSSE(f *testing.F) {
	for _, s := range []string{
		"data: [DONE]\n",
		`data: {"choices":[{"delta":{"content":"x"}}]}` + "\n\n",
		`data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}` + "\n",
		`data: {"error":{"message":"context length"}}` + "\n",
		": ping\r\nevent: x\r\ndata: {}\r\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"\\u00e9\"}}]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var lr lineReader
		lr.reset(bytes.NewReader(in))
		var text, refText []byte
		sawContent := false
		for i := 0; ; i++ {
			line, err := lr.next()
			if err != nil {
				break
			}
			if i > len(in)+1 {
				t.Fatalf("line reader does not terminate")
			}
			ev, ok, perr := parseSSELine(line, &text)
			if !ok && (perr != nil || ev.Content || ev.Done || ev.HasUsage) {
				t.Fatalf("non-data line produced an event: %+v %v", ev, perr)
			}
			if perr != nil && !errors.Is(perr, errMalformed) {
				t.Fatalf("parse error %v does not wrap errMalformed", perr)
			}
			sawContent = sawContent || ev.Content
			// With and without the live text, the one pass decides as
			// encoding/json does.
			fast, fok, ferr := parseSSELine(line, nil)
			ref, rok, rerr := referenceSSELine(line, &refText)
			for _, got := range []struct {
				ev  sseEvent
				ok  bool
				err error
			}{{ev, ok, perr}, {fast, fok, ferr}} {
				if got.ok != rok || (got.err != nil) != (rerr != nil) || got.ev.Content != ref.Content || got.ev.Reasoning != ref.Reasoning ||
					got.ev.Done != ref.Done || got.ev.HasUsage != ref.HasUsage || got.ev.Usage != ref.Usage || (got.ev.ErrorMessage != nil) != (ref.ErrorMessage != nil) {
					t.Fatalf("line %q: one pass %+v %v %v, encoding/json %+v %v %v", line, got.ev, got.ok, got.err, ref, rok, rerr)
				}
			}
			if !bytes.Equal(text, refText) {
				t.Fatalf("line %q: live text %q, encoding/json %q", line, text, refText)
			}
		}
		if len(text) > 0 && !sawContent {
			t.Fatalf("text %q collected without a content event", text)
		}
	})
}

// referenceSSELine is parseSSELine deciding every data line with
// encoding/json (decodeSSEData).
func referenceSSELine(line []byte, text *[]byte) (sseEvent, bool, error) {
	data, ok := bytes.CutPrefix(line, dataPrefix)
	data = bytes.TrimSpace(data)
	if !ok || len(data) == 0 {
		return sseEvent{}, false, nil
	}
	if bytes.Equal(data, doneMarker) {
		return sseEvent{Done: true}, true, nil
	}
	if data[0] != '{' {
		return sseEvent{}, true, errMalformed
	}
	ev, err := decodeSSEData(data, text)
	return ev, true, err
}

// TestFastPathAgreesWithFullDecode checks the one-pass parse, with and
// without the live text, against encoding/json on the chunk shapes
// servers send.
func TestFastPathAgreesWithFullDecode(t *testing.T) {
	t.Parallel()
	lines := []string{
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`,
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"hmm"},"finish_reason":null}]}`,
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":null,"reasoning":"r"},"finish_reason":null}]}`,
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
		`data: {"id":"1","choices":[{"index":0,"delta":{"content":"\\"}}]}`,
	}
	for _, l := range lines {
		var text, refText []byte
		live, _, err1 := parseSSELine([]byte(l), &text)
		fast, _, err2 := parseSSELine([]byte(l), nil)
		full, _, err3 := referenceSSELine([]byte(l), &refText)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("%s: %v / %v / %v", l, err1, err2, err3)
		}
		if live.Fallback || fast.Fallback {
			t.Errorf("%s: went to encoding/json", l)
		}
		if full.Content != fast.Content || full.Reasoning != fast.Reasoning || full.Content != live.Content || full.Reasoning != live.Reasoning {
			t.Errorf("%s: encoding/json %+v, one pass %+v, with live text %+v", l, full, fast, live)
		}
		if string(text) != string(refText) {
			t.Errorf("%s: live text %q, encoding/json %q", l, text, refText)
		}
	}
}
