package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ExportOptions configure FinishExport.
type ExportOptions struct {
	// SliceDuration enables the timeslice exports; 0 disables them.
	SliceDuration time.Duration
	// Version is written as aiperf_version (default "agentperf-dev").
	Version string
	// Location is the zone of the naive local start_time/end_time
	// (default time.Local).
	Location *time.Location
}

// EachRequestIn calls fn with every request of the record export at path
// that is not a context overflow, in file order, as an Aggregator's
// EachRequest gives a run's (the figures' input of a folder whose records
// were written elsewhere: a merged run).
func EachRequestIn(path string, fn func(RequestRow)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := readExport(f, path, false, nil)
	if err != nil {
		return err
	}
	eachRow(&p.rows, fn)
	return nil
}

// FinishExport computes the aggregates of the records already in dir
// (profile_export.jsonl and context_overflow_export.jsonl, as the
// RecordWriter writes them) and writes them with info as an Aggregator's
// Finish does: profile_export_aiperf.json and .csv and, with a slice
// duration, the timeslices. It is the same computation as a run's (the
// rows Report reads from an export are the rows the Aggregator keeps),
// so the aggregates of a folder whose records are the union of several
// runs' records are exactly those of one run that recorded them all — no
// statistic of statistics. info.Accounting.Sent is checked against the
// records (the buckets are counted from them); a mismatch is in
// Summary.AccountingErr and returned.
func FinishExport(dir string, info RunInfo, opt ExportOptions) (*Summary, error) {
	if opt.Version == "" {
		opt.Version = "agentperf-dev"
	}
	if opt.Location == nil {
		opt.Location = time.Local
	}
	path := filepath.Join(dir, FileRecords)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("aggregate %s: %w", dir, err)
	}
	p, err := readExport(f, path, false, nil)
	f.Close()
	if err != nil {
		return nil, err
	}
	if err := p.countOverflows(filepath.Join(dir, FileOverflow)); err != nil {
		return nil, fmt.Errorf("aggregate %s: %w", filepath.Join(dir, FileOverflow), err)
	}
	s := p.summary(info, opt.SliceDuration)
	if err := s.writeAggregates(dir, exportOptions{version: opt.Version, location: opt.Location}, true); err != nil {
		return s, err
	}
	return s, s.AccountingErr
}
