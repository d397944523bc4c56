package dataset

import (
	"reflect"
	"testing"
)

// fuzzRequests decodes b into at most 24 requests, 4 bytes each: start
// (in quarter seconds, relative to the previous one, so times may tie or
// go back), api time, model, and a hash list drawn from a small alphabet
// so prefixes are shared often.
func fuzzRequests(b []byte) []Request {
	var out []Request
	t := 0.0
	for len(b) >= 4 && len(out) < 24 {
		dt, api, model, h := b[0], b[1], b[2], b[3]
		b = b[4:]
		t += float64(int(dt%16)-4) / 4
		if t < 0 {
			t = 0
		}
		r := Request{T: t, APITime: float64(api%32) / 4, Model: string(rune('A' + model%3)), In: int(h) * 400, Out: int(api) * 20}
		if api%7 == 0 {
			r.APITime = -1
		}
		n := int(h % 6)
		for k := 0; k < n; k++ {
			r.HashIDs = append(r.HashIDs, uint32((int(h)>>k)%3+k*3))
		}
		out = append(out, r)
	}
	return out
}

// FuzzLayoutChains: on any request list the layout does not panic, puts
// every request in exactly one chain, labels every worker chain
// distinctly, and is the same when computed twice.
func FuzzLayoutChains(f *testing.F) {
	f.Add([]byte{0, 4, 0, 9, 8, 4, 0, 19, 6, 30, 1, 27, 4, 4, 0, 63})
	f.Add([]byte{4, 1, 0, 5, 4, 1, 0, 5, 4, 1, 0, 5, 4, 2, 1, 33, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		reqs := fuzzRequests(b)
		for _, split := range []bool{true, false} {
			o := DefaultChainOptions()
			o.Split = split
			o.SeamMaxGap = float64(len(b) % 5)
			l := LayoutChains(reqs, o)
			seen := make([]int, len(reqs))
			for _, i := range l.Main {
				seen[i]++
			}
			labels := map[string]bool{}
			for _, w := range l.Workers {
				if len(w.Reqs) == 0 || labels[w.Label] {
					t.Fatalf("worker chain %q empty or labelled twice: %+v", w.Label, l)
				}
				labels[w.Label] = true
				for _, i := range w.Reqs {
					seen[i]++
				}
			}
			for i, n := range seen {
				if n != 1 {
					t.Fatalf("request %d is in %d chains: %+v", i, n, l)
				}
			}
			if len(reqs) > 0 && len(l.Main) == 0 {
				t.Fatalf("empty main chain: %+v", l)
			}
			if again := LayoutChains(reqs, o); !reflect.DeepEqual(again, l) {
				t.Fatalf("not deterministic:\n%+v\n%+v", l, again)
			}
		}
	})
}
