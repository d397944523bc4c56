package rendezvous

import (
	"bufio"
	"bytes"
	"testing"
)

// FuzzRecv: whatever a peer sends, reading it never panics, and what is
// read is a message with a type.
func FuzzRecv(f *testing.F) {
	f.Add([]byte(`{"t":"hello","shard":1,"count":3,"key":{"seed":1,"argv":["a"],"corpus_digest":"x","lanes":3}}` + "\n"))
	f.Add([]byte(`{"t":"release","name":"warmup","at":5,"align":{"T0":1,"Has":true}}` + "\n"))
	f.Add([]byte("garbage\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l := &link{r: bufio.NewReader(bytes.NewReader(b))}
		for range 4 {
			m, err := l.recv()
			if err != nil {
				return
			}
			if m.T == "" {
				t.Fatalf("a message without a type was accepted from %q", b)
			}
		}
	})
}

// FuzzFirstHost: any host list gives a host without panicking.
func FuzzFirstHost(f *testing.F) {
	for _, s := range []string{"node[01-04]", "a,b", "x[1,3-5]y", "[", "]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		FirstHost(s)
		ParseShard(s)
	})
}
