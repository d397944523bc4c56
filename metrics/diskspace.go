package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// FileReserve is the reserve file a Collector keeps in its directory
// (CollectorOptions.ReserveBytes); it is removed at Finish.
const FileReserve = ".agentperf-reserve"

// ReserveShare is the largest share of a disk's free space a reserve file
// takes (ReserveBound): the disk is shared with other writers (the server's
// logs, other runs), and a reserve as large as the free space would leave
// them nothing.
const ReserveShare = 0.5

// ReserveBound is the largest reserve for a disk with free bytes free.
func ReserveBound(free int64) int64 { return int64(float64(max(free, 0)) * ReserveShare) }

// RemoveReserve removes the reserve file in dir and returns its size: one
// left there by a run that did not end (a SIGKILL, a crash); 0 when there
// is none.
func RemoveReserve(dir string) (int64, error) {
	path := filepath.Join(dir, FileReserve)
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("look for a reserve file left by an earlier run: %w", err)
	}
	if err := os.Remove(path); err != nil {
		return 0, fmt.Errorf("remove the reserve file %s left by an earlier run (it takes %d bytes; remove it by hand): %w", path, st.Size(), err)
	}
	return max(st.Size(), 1), nil
}

// writeReserve writes a file of n zero bytes at path and returns the path.
// When only part fits, the part that was written is kept (room for part
// of the end of a run is better than none); "" (and no file) when nothing
// could be written.
func writeReserve(path string, n int64) string {
	f, err := os.Create(path)
	if err != nil {
		return ""
	}
	zeros := make([]byte, 64<<10)
	var written int64
	for left := n; left > 0 && err == nil; {
		k := min(left, int64(len(zeros)))
		var m int
		m, err = f.Write(zeros[:k])
		written += int64(m)
		left -= k
	}
	if err != nil {
		f.Truncate(written) // a short write may have allocated more
	}
	f.Close()
	if written == 0 {
		os.Remove(path)
		return ""
	}
	return path
}

// The bounds of ReserveFor, from the aggregates of simulator runs (an
// aggregate JSON of about 22 KB with the warmup's metrics, a CSV of 4 KB,
// a timeslice of about 9.5 KB of JSON and 11 KB of CSV), doubled for
// error groups, warnings and long names.
const (
	reserveAggregateBytes = 64 << 10 // the aggregate JSON and CSV
	reservePerLaneBytes   = 64       // per lane: start_turns and the like
	reservePerSliceBytes  = 24 << 10 // one timeslice, JSON and CSV
)

// ReserveFor is the room a run keeps for its aggregates on a disk that
// fills up (CollectorOptions.ReserveBytes): a bound on what
// Collector.Finish writes for lanes lanes and a profiling phase of about
// d cut into slices of slice (0: no timeslice files). The aggregate's size
// is set by the metrics it holds, not by the number of records; the
// timeslice files grow with the number of slices. A grace period's
// trailing slices are counted in a margin of 10 %.
func ReserveFor(lanes int, d, slice time.Duration) int64 {
	n := int64(reserveAggregateBytes) + int64(max(lanes, 0))*reservePerLaneBytes
	if slice > 0 && d > 0 {
		slices := int64(d/slice) + 2
		n += (slices + slices/10) * reservePerSliceBytes
	}
	return n
}

// cutToLastLine truncates f after its last newline, so that a stream whose
// write failed part-way ends with a complete record.
func cutToLastLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cut %s to its last complete line: %w", f.Name(), err)
	}
	end := st.Size()
	buf := make([]byte, 64<<10)
	for end > 0 {
		off := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-off], off)
		if err != nil && err != io.EOF {
			return fmt.Errorf("cut %s to its last complete line: %w", f.Name(), err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = off + int64(i) + 1
			break
		}
		end = off
	}
	if end == st.Size() {
		return nil
	}
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("cut %s to its last complete line: %w", f.Name(), err)
	}
	return nil
}

// Artifact size estimate (EstimateArtifactBytes): measured on runs against
// the simulator, a profile_export.jsonl record is about 1.9 KB; the server
// metrics export grows by about 8 KB per second of run (1 s timeslices of
// vLLM's metric set); the fixed part (metrics_plots.png, report.html, the
// aggregates, the log) is under 2 MB.
const (
	estimateRecordBytes      = 2 << 10
	estimateServerBytesPerS  = 8 << 10
	estimateFixedBytes       = 2 << 20
	estimateRequestsPerLaneS = 0.25
)

// EstimateArtifactBytes estimates the bytes a run of `lanes` lanes
// profiling for d writes: the fixed artifacts (2 MB), the server metrics
// export (8 KB per second) and one 2 KB record per request, at 0.25
// requests per lane per second (a lane of an agentic replay sends a
// request every few seconds: the response's time plus the recorded think
// time; a faster server sends more). The warmup is left out. It is an
// estimate for a warning, not a bound.
func EstimateArtifactBytes(lanes int, d time.Duration) int64 {
	s := d.Seconds()
	return estimateFixedBytes + int64(estimateServerBytesPerS*s) + int64(float64(lanes)*s*estimateRequestsPerLaneS*estimateRecordBytes)
}
