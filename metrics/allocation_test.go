//go:build !race

package metrics

import "testing"

// TestAddDoesNotAllocate guards the hot path: once the row slice has room,
// adding a record allocates nothing (line buffers are pooled).
func TestAddDoesNotAllocate(t *testing.T) {
	c, err := NewCollector(t.TempDir(), CollectorOptions{Now: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	c.rows = make([]row, 0, 1000)
	r := okRecord(1, 0, 120, 8, 48211, 311, 700, 753)
	c.Add(r) // warm the pool
	if n := testing.AllocsPerRun(500, func() { c.Add(r) }); n > 0 {
		t.Errorf("Collector.Add allocates %v times per record", n)
	}
}
