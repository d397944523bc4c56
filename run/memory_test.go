package run

import (
	"strings"
	"testing"
)

// TestCheckLanes: the lanes of this process are refused when they do not
// fit in the memory available, with the limit and its source named.
func TestCheckLanes(t *testing.T) {
	m := Memory{Bytes: 1000 * BytesPerLane, Source: "MemAvailable in /proc/meminfo"}
	if err := checkLanes(1000, m); err != nil {
		t.Fatalf("1000 lanes in room for 1000: %v", err)
	}
	err := checkLanes(1001, m)
	if err == nil {
		t.Fatal("1001 lanes in room for 1000 accepted")
	}
	for _, want := range []string{"1001 lanes", "at most 1000 lanes", "MemAvailable in /proc/meminfo", "--concurrency"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if err := checkLanes(1<<62, m); err == nil || !strings.Contains(err.Error(), "EiB") {
		t.Errorf("a lane count whose memory overflows int64: %v", err)
	}
}

// TestProcessLanes: a shard holds lane i when i mod N is its index.
func TestProcessLanes(t *testing.T) {
	for _, c := range []struct{ lanes, index, count, want int }{
		{10, 0, 1, 10}, {10, 0, 3, 4}, {10, 1, 3, 3}, {10, 2, 3, 3}, {2, 0, 2, 1},
	} {
		s := &Spec{}
		s.Replay.Concurrency = c.lanes
		s.Replay.Shard.Index, s.Replay.Shard.Count = c.index, c.count
		if got := s.processLanes(); got != c.want {
			t.Errorf("%d lanes, shard %d/%d: %d, want %d", c.lanes, c.index, c.count, got, c.want)
		}
	}
}
