package servermetrics

import (
	"fmt"
	"strings"
	"testing"
)

// benchPage is a vLLM-like page with 8 engines (about 1,200 sample lines,
// 2 of 3 histograms' worth of buckets), the size of a DP-8 server.
func benchPage(k int) []byte {
	var b strings.Builder
	for e := 0; e < 8; e++ {
		p := vllmPage(k)
		b.WriteString(strings.ReplaceAll(p, `engine="0"`, fmt.Sprintf(`engine="%d"`, e)))
	}
	// Repeated HELP/TYPE lines are invalid; keep only the first block's.
	lines := strings.Split(b.String(), "\n")
	seen := map[string]bool{}
	var out strings.Builder
	for _, l := range lines {
		if strings.HasPrefix(l, "#") {
			if seen[l] {
				continue
			}
			seen[l] = true
		}
		out.WriteString(l)
		out.WriteByte('\n')
	}
	return []byte(out.String())
}

func BenchmarkParseAndStore(b *testing.B) {
	pages := [][]byte{benchPage(1), benchPage(2)}
	p := newParser()
	st := newStore([]string{"http://a/metrics"})
	b.SetBytes(int64(len(pages[0])))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		fams, err := p.parse(pages[i%2])
		if err != nil {
			b.Fatal(err)
		}
		st.add(0, int64(i)*333e6, fams)
		i++
	}
}

// BenchmarkSnapshot builds the export of a 5-minute collection (900
// scrapes at 333 ms) with 1 s slices.
func BenchmarkSnapshot(b *testing.B) {
	p := newParser()
	s := New(Config{URLs: []string{"http://a/metrics"}, SliceDuration: 1e9})
	for k := range 900 {
		fams, err := p.parse(benchPage(k))
		if err != nil {
			b.Fatal(err)
		}
		s.st.add(0, int64(k)*333e6, fams)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Derive(s.Snapshot())
	}
}
