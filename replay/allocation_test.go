//go:build !race

package replay

import (
	"bytes"
	"net"
	"strconv"
	"testing"
	"time"
)

// cannedServer answers every request on one keep-alive connection with
// the same response, allocating nothing per request (testing.AllocsPerRun
// counts the whole process): it reads the head, then Content-Length bytes
// of body, into buffers it owns.
func cannedServer(t *testing.T, response []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		n := 0
		for {
			// One request: the head, then its body.
			end := -1
			for end < 0 {
				end = bytes.Index(buf[:n], []byte("\r\n\r\n"))
				if end >= 0 {
					break
				}
				m, err := c.Read(buf[n:])
				if err != nil {
					return
				}
				n += m
			}
			head := buf[:end]
			cl := 0
			if i := bytes.Index(head, []byte("Content-Length: ")); i >= 0 {
				for _, ch := range head[i+len("Content-Length: "):] {
					if ch < '0' || ch > '9' {
						break
					}
					cl = cl*10 + int(ch-'0')
				}
			}
			total := end + 4 + cl
			for n < total {
				m, err := c.Read(buf[n:])
				if err != nil {
					return
				}
				n += m
			}
			copy(buf, buf[total:n])
			n -= total
			if _, err := c.Write(response); err != nil {
				return
			}
		}
	}()
	return "http://" + ln.Addr().String()
}

func httpResponse(contentType string, body []byte) []byte {
	return append([]byte("HTTP/1.1 200 OK\r\nContent-Type: "+contentType+"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...)
}

func chunkedSSE(events ...[]byte) []byte {
	b := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, e := range events {
		frame := append(append([]byte("data: "), e...), "\n\n"...)
		b = append(b, strconv.FormatInt(int64(len(frame)), 16)+"\r\n"...)
		b = append(b, frame...)
		b = append(b, "\r\n"...)
	}
	return append(b, "0\r\n\r\n"...)
}

// TestClientPathAllocs guards the per-request client path (write the body,
// read and parse the response), as fasthttp's allocation tests guard its own: after
// the slot's buffers have grown, an exchange allocates nothing, streaming
// or not.
func TestClientPathAllocs(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_completion_tokens":8,"stream":false}`)
	stream := chunkedSSE(
		[]byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`),
		benchContentLine[len("data: "):], benchContentLine[len("data: "):], benchContentLine[len("data: "):],
		benchUsageLine[len("data: "):], []byte("[DONE]"))
	cases := []struct {
		name      string
		streaming bool
		live      bool // collect the reply's text (live-assistant mode)
		response  []byte
		max       float64
	}{
		{"non-streaming", false, false, httpResponse("application/json", benchFullBody), 0},
		{"streaming", true, false, stream, 0},
		{"non-streaming live text", false, true, httpResponse("application/json", benchFullBody), 0},
		{"streaming live text", true, true, stream, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := (&Config{URL: cannedServer(t, tc.response), Endpoint: "/v1/chat/completions", Streaming: tc.streaming,
				ConnectTimeout: 5 * time.Second, APIKey: "k", Headers: map[string]string{"X-B": "2", "X-A": "1"}}).normalize()
			k, err := newConn(c, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer k.close()
			var clock int64
			now := func() int64 { clock++; return clock }
			hdr := func(h *reqHeader) {
				h.Set("X-Request-ID", "0d9c2b7e-3f4a-4c1e-9a77-5b2f0e6d8c11")
				h.Set("X-Correlation-ID", "6a1f0c3d-8e2b-4d5a-b7c9-0e4f1a2b3c4d")
			}
			var text []byte
			check := func() {
				var tp *[]byte
				if tc.live {
					text = text[:0]
					tp = &text
				}
				x := k.do(c, body, nil, hdr, now, tp)
				if x.err != nil || x.fallback || !x.hasUsage || x.usage.PromptTokens == 0 || x.firstNs == 0 || (tc.live && len(text) == 0) {
					t.Fatalf("exchange = %+v (err %v)", x, x.err)
				}
			}
			for range 5 {
				check() // connect, grow the lane's buffers
			}
			if n := testing.AllocsPerRun(200, check); n > tc.max {
				t.Errorf("one %s exchange allocates %v times, want at most %v", tc.name, n, tc.max)
			}
		})
	}
}
