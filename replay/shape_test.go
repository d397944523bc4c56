package replay

import (
	"bytes"
	"strings"
	"testing"
)

// sameEvent compares what two parses of one SSE line decided: the event,
// whether it was a data line, the error (by its text) and the live text.
func sameEvent(t *testing.T, line []byte, got, want sseEvent, gok, wok bool, gerr, werr error, gtext, wtext []byte) {
	t.Helper()
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%q: error %v, parseSSELine %v", line, gerr, werr)
	}
	if gok != wok || got.Done != want.Done || got.Content != want.Content || got.Reasoning != want.Reasoning ||
		got.HasUsage != want.HasUsage || got.Usage != want.Usage || !bytes.Equal(got.ErrorMessage, want.ErrorMessage) || got.Fallback != want.Fallback {
		t.Fatalf("%q: %+v (ok %v), parseSSELine %+v (ok %v)", line, got, gok, want, wok)
	}
	if !bytes.Equal(gtext, wtext) {
		t.Fatalf("%q: text %q, parseSSELine %q", line, gtext, wtext)
	}
}

// checkShapeStream parses lines in order with one eventShape and each on
// its own with parseSSELine, with and without live text; it returns how
// many events the shape decided.
func checkShapeStream(t *testing.T, lines [][]byte) int {
	hits := 0
	for _, live := range []bool{false, true} {
		var sh eventShape
		var gt, wt []byte
		for _, line := range lines {
			var gp, wp *[]byte
			if live {
				gp, wp = &gt, &wt
			}
			got, gok, gerr := sh.parse(line, gp)
			want, wok, werr := parseSSELine(line, wp)
			sameEvent(t, line, got, want, gok, wok, gerr, werr, gt, wt)
		}
		hits = sh.hits
	}
	return hits
}

// TestEventShapeOnEveryServer: on the streams vLLM, SGLang, Dynamo,
// llm-d-inference-sim and the simulator send, the shape decides every
// event as parseSSELine does. Each recorded event with one string field
// in its deltas is followed by variants of it with other strings there
// (a longer stream of the same server): the shape decides every variant
// itself.
func TestEventShapeOnEveryServer(t *testing.T) {
	others := []string{`""`, `" the"`, `"\n\t\"q\""`, `"caf\u00e9 \ud83d\ude00"`, "\"\u2028 \xff\"", `"a\/b"`}
	for _, r := range wireResponses(t) {
		if !r.stream {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			var lines [][]byte
			variants := 0
			for _, line := range sseLines(t, r.body) {
				lines = append(lines, line)
				data := bytes.TrimSpace(bytes.TrimPrefix(line, dataPrefix))
				lt := liveText{delta: true}
				if sc, ok := scanCompletionText(data, &lt); !ok || sc.errorSet || sc.text || lt.deltaLits != 1 {
					continue
				}
				off := cap(data) - cap(lt.deltaLit)
				for _, o := range others {
					v := append([]byte("data: "), data[:off]...)
					v = append(v, o...)
					v = append(v, data[off+len(lt.deltaLit):]...)
					lines = append(lines, v)
					variants++
				}
			}
			if hits := checkShapeStream(t, lines); hits < variants {
				t.Errorf("the shape decided %d events of %d variants", hits, variants)
			}
			if strings.Contains(r.name, "-chat-stream") && !strings.Contains(r.name, "tools") && variants == 0 {
				t.Errorf("no event of the chat stream has one string field: the shape never applies")
			}
		})
	}
}

// TestEventShapeEdges: events that look like the kept shape but are not
// one JSON string in its place are parsed in full, and decide as
// parseSSELine does.
func TestEventShapeEdges(t *testing.T) {
	const pre = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":`
	const suf = `},"finish_reason":null}]}`
	lines := []string{
		pre + `"first"` + suf,
		pre + `"second"` + suf,
		pre + `""` + suf,                   // empty: not content
		pre + `"a","content":"b"` + suf,    // a duplicate key: encoding/json's call
		pre + `"a" , "role":"x"` + suf,     // two members in the string's place
		pre + `"bad \x escape"` + suf,      // an invalid string token
		pre + `"ctl ` + "\x01" + `"` + suf, // a control byte
		pre + `"\u00e9t\u00e9 \ud83d\ude00"` + suf,
		pre + `null` + suf,
		pre + `"x"` + `},"finish_reason":"stop"}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"u"}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
		pre + `"after usage"` + suf,
		pre + `"after usage"` + suf,
		`data: [DONE]`,
	}
	var ls [][]byte
	for _, l := range lines {
		ls = append(ls, []byte(l))
	}
	if hits := checkShapeStream(t, ls); hits == 0 {
		t.Fatal("the shape decided no event")
	}
}

// FuzzEventShape holds the shape to parseSSELine on arbitrary streams:
// the input's lines are parsed in order, each decided as parseSSELine
// decides it alone.
func FuzzEventShape(f *testing.F) {
	const pre = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":`
	const suf = `},"finish_reason":null}]}`
	f.Add([]byte(pre + `"a"` + suf + "\n" + pre + `"b"` + suf + "\n" + pre + `"\n` + suf + "\ndata: [DONE]\n"))
	f.Add([]byte(pre + `"a"` + suf + "\n" + pre + `"b","content":"c"` + suf + "\n"))
	f.Add([]byte(pre + `"a"` + suf + "\n" + pre + `"\ud800"` + suf + "\n" + pre + `"\q"` + suf + "\n"))
	for _, r := range wireResponses(f) {
		if r.stream {
			f.Add(r.body)
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		if len(stream) > 64<<10 {
			return
		}
		var lines [][]byte
		for _, l := range bytes.Split(stream, []byte("\n")) {
			lines = append(lines, bytes.TrimSuffix(l, []byte("\r")))
		}
		checkShapeStream(t, lines)
	})
}
