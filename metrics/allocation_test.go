//go:build !race

package metrics

import "testing"

// TestAddDoesNotAllocate guards the hot path: adding a record allocates
// nothing (line buffers are pooled; the row columns allocate one chunk per
// columnChunkRows records, here only in the warm-up Add).
func TestAddDoesNotAllocate(t *testing.T) {
	c, err := NewCollector(t.TempDir(), CollectorOptions{Now: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	r := okRecord(1, 0, 120, 8, 48211, 311, 700, 753)
	c.Add(r) // warm the pool, allocate the first chunk
	if n := testing.AllocsPerRun(columnChunkRows/4, func() { c.Add(r) }); n > 0 {
		t.Errorf("Collector.Add allocates %v times per record", n)
	}
}

// TestColumnsAppendDoesNotAllocate: within a chunk, storing a row
// allocates nothing.
func TestColumnsAppendDoesNotAllocate(t *testing.T) {
	var c columns
	r := distinctRow(1)
	c.append(&r) // the first chunk
	if n := testing.AllocsPerRun(columnChunkRows/2, func() { c.append(&r) }); n > 0 {
		t.Errorf("columns.append allocates %v times per row", n)
	}
}

// TestTallyDoesNotAllocate: the engine's per-request updates of the tally
// allocate nothing.
func TestTallyDoesNotAllocate(t *testing.T) {
	var tl Tally
	r := okRecord(1, 0, 120, 8, 48211, 311, 700, 753)
	if n := testing.AllocsPerRun(1000, func() { tl.Send(); tl.Returned(); tl.Add(r) }); n > 0 {
		t.Errorf("a request's tally updates allocate %v times", n)
	}
}
