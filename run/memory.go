package run

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/internal/numfmt"
)

// BytesPerLane is the memory one lane of a run takes at its peak, when
// every lane has a request in flight (the warmup sends one per lane at
// once), measured against the simulator (docs/stopping-early.md, "Lanes
// and memory"): the peak resident size of a run of 4,000 lanes (1,386,556
// kB) less that of a run of 200 (210,840 kB), over the 3,800 lanes
// between them, is 309 kB. A lane count whose lanes do not fit in the
// memory available is refused before anything is loaded.
const BytesPerLane = 300 << 10

// Memory is what a process may still use: Bytes, and Source, where the
// figure was read (for the message that quotes it).
type Memory struct {
	Bytes  int64
	Source string
}

// AvailableMemory returns the memory this process may use: the smaller of
// the kernel's estimate of what can be allocated without swapping
// (MemAvailable in /proc/meminfo) and the room left under the process's
// cgroup limit (cgroup v2 memory.max less memory.current, or v1's
// memory.limit_in_bytes less memory.usage_in_bytes). ok is false where
// neither can be read (not Linux).
func AvailableMemory() (m Memory, ok bool) {
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, found := meminfoField(b, "MemAvailable:"); found {
			m, ok = Memory{Bytes: kb << 10, Source: "MemAvailable in /proc/meminfo"}, true
		}
	}
	for _, c := range [][3]string{
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "the cgroup's memory.max"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes", "the cgroup's memory.limit_in_bytes"},
	} {
		limit, err1 := readInt(c[0])
		used, err2 := readInt(c[1])
		if err1 != nil || err2 != nil || limit <= 0 || limit >= 1<<62 {
			continue
		}
		if left := max(limit-used, 0); !ok || left < m.Bytes {
			m, ok = Memory{Bytes: left, Source: c[2]}, true
		}
		break
	}
	return m, ok
}

// meminfoField returns the kB value of a /proc/meminfo line.
func meminfoField(b []byte, name string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == name {
			n, err := strconv.ParseInt(f[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// readInt reads a file holding one integer ("max" is an error).
func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// checkLanes refuses lanes lanes of this process when their memory
// (BytesPerLane each) exceeds m, naming the limit.
func checkLanes(lanes int, m Memory) error {
	limit := m.Bytes / BytesPerLane
	if int64(lanes) <= limit {
		return nil
	}
	return fmt.Errorf("profile: %d lanes in this process need about %s of memory (%s per lane, measured), but %s leaves %s: at most %d lanes fit; lower --concurrency, or split the run over shards on several machines (--shard, docs/distributed.md)",
		lanes, numfmt.Bytes(mulSat(int64(lanes), BytesPerLane)), numfmt.Bytes(BytesPerLane), m.Source, numfmt.Bytes(m.Bytes), limit)
}

// mulSat multiplies without overflow, saturating at the largest int64.
func mulSat(a, b int64) int64 {
	if b != 0 && a > (1<<63-1)/b {
		return 1<<63 - 1
	}
	return a * b
}

// processLanes is the number of the run's lanes this process drives: all
// of them, or a shard's share (lane i belongs to shard i mod N).
func (s *Spec) processLanes() int {
	l, sh := s.Replay.Concurrency, s.Replay.Shard
	if !sh.Sharded() || sh.Index >= l {
		return l
	}
	return (l - sh.Index + sh.Count - 1) / sh.Count
}
