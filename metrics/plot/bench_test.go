package plot

import (
	"path/filepath"
	"testing"
)

// BenchmarkRender draws the full figure from 90 s of two-engine slices
// and 400 requests, and writes the PNG.
func BenchmarkRender(b *testing.B) {
	in := Input{Requests: fixtureRequests(400), Server: fixtureExport(90)}
	path := filepath.Join(b.TempDir(), FileName)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Render(in, path); err != nil {
			b.Fatal(err)
		}
	}
}
