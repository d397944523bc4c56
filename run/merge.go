package run

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/servermetrics"
	"github.com/agentperf/agentperf/timing"
)

// ErrMerge is wrapped by Merge's refusals: folders of different runs,
// missing or duplicate shards, an output folder in the way.
var ErrMerge = errors.New("merge refused")

// MergeInput is what Merge merges.
type MergeInput struct {
	// Dir is the merged folder to write; it must not exist or be empty.
	Dir string
	// Shards are the shard folders, one per shard of the run, in any
	// order.
	Shards []string
}

// plotNoServerExport starts the plot's warning about a folder without a
// server metrics export (metrics/plot.Render).
const plotNoServerExport = "plot: no server metrics export"

// Merge writes the folder of one run from the folders of its shards
// (docs/distributed.md): every record of every shard (each shard's
// timestamps put on shard 0's clock when the skew measured at the
// rendezvous exceeds its uncertainty), the aggregates computed from that
// union by the code of a single run (metrics.FinishExport: no percentile
// of percentiles), the timeslices from the common profiling start, shard
// 0's server metrics, the plot and report.html — finished by Finish, as a
// run is, with the shards' Results combined. It refuses folders of
// different runs (run id, seed, argv, corpus digest, shard count,
// lanes), missing shards and duplicate shards, and returns the merged
// run's Outcome.
func Merge(in MergeInput) (out *Outcome, err error) {
	shards, err := checkShards(in)
	if err != nil {
		return nil, err
	}
	created, err := prepareOut(in.Dir, in.Shards)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			// Nothing is left in OUT by a merge that failed: the retry
			// after a fix must not be refused as "not empty".
			clearOut(in.Dir, created)
		}
	}()
	res := mergeResults(shards)
	// The records first: the report of each shard counts them.
	for _, sh := range shards {
		if err := sh.copyRecords(in.Dir); err != nil {
			return nil, err
		}
	}
	if err := copyShared(in.Dir, shards); err != nil {
		return nil, err
	}
	m0 := shards[0].m
	if gen, err := timing.LookupGeneration(m0.Finish.Generation); err == nil {
		res.Generation = gen
	} else if res.Generation.IsZero() {
		return nil, fmt.Errorf("merge: shard 0's generation %q: %w", m0.Finish.Generation, err)
	}
	out, err = Finish(res, mergedInput(in.Dir, shards))
	if err != nil {
		return nil, err
	}
	out.Result, out.Dir = res, in.Dir
	return out, nil
}

// copyShared writes what the merged folder takes from shard 0 (its server
// metrics export: only shard 0 scrapes) and the merged run log.
func copyShared(dir string, shards []*shardDir) error {
	for _, name := range []string{servermetrics.JSONFile, servermetrics.CSVFile} {
		if err := copyFile(filepath.Join(shards[0].dir, name), filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("merge: copy shard 0's %s: %w", name, err)
		}
	}
	if err := mergeLogs(dir, shards); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	return nil
}

// mergedInput is Finish's Input for the merged run: shard 0's recorded
// Finish input, the shards' warnings and report, and the collector of the
// merged record streams.
func mergedInput(dir string, shards []*shardDir) Input {
	m0 := shards[0].m
	warnings, shardReport := shardWarnings(shards)
	fin := Input{
		Dir:            dir,
		Collector:      &mergeCollector{dir: dir, opt: metrics.ExportOptions{SliceDuration: time.Duration(m0.Finish.SliceDurationNs), Version: m0.Finish.Version}},
		Scenario:       m0.Finish.Scenario,
		StaticReasons:  m0.Finish.StaticReasons,
		Duration:       time.Duration(m0.Finish.DurationNs),
		Coverage:       scenario.Coverage{Required: m0.Finish.CoverageRequired, MinPhase: time.Duration(m0.Finish.CoverageMinNs)},
		Concurrency:    m0.Finish.Concurrency,
		OverflowAdvice: m0.Finish.OverflowAdvice,
		InputConfig:    m0.Finish.InputConfig,
		Corpus:         m0.Finish.Corpus,
		PublicDataset:  m0.Finish.PublicDataset,
		Described:      &m0.Finish.Described,
		Warnings:       warnings,
		NoPlot:         m0.Finish.NoPlot,
		Extra: map[string]any{
			"merged_shards": shardReport,
			"shard":         map[string]any{"run_id": m0.RunID, "shards": m0.Count, "merged": true},
		},
	}
	if m0.Finish.ServerDerived != nil {
		fin.Extra["server_derived"] = m0.Finish.ServerDerived
	}
	if l := m0.Finish.OverflowRateLimit; l != nil {
		fin.OverflowRateLimit = scenario.Some(*l)
	}
	// The threshold judges the whole run: the shards left it to the merge.
	if v, ok := metrics.JSONFloat(m0.Finish.InputConfig["failed_request_threshold"]); ok {
		fin.FailedRequestThreshold = v
	}
	return fin
}

// shardWarnings are the merged run's warnings (shard 0's, then the other
// shards' named by shard, and every early stop) and the report of each
// shard (metadata.agentperf.merged_shards).
func shardWarnings(shards []*shardDir) ([]string, []map[string]any) {
	warnings := slices.Clone(shards[0].m.Finish.Warnings)
	var shardReport []map[string]any
	for _, sh := range shards {
		if sh.m.Index > 0 {
			for _, w := range sh.m.Finish.Warnings {
				if strings.HasPrefix(w, plotNoServerExport) {
					// Only shard 0 scrapes the server: the merged folder
					// has its export, so the other shards' lack of one
					// says nothing about it.
					continue
				}
				w = "shard " + strconv.Itoa(sh.m.Index) + ": " + w
				if !slices.Contains(warnings, w) {
					warnings = append(warnings, w)
				}
			}
		}
		if sh.m.Stop != "" {
			warnings = append(warnings, fmt.Sprintf("shard %d/%d stopped early: %s", sh.m.Index, sh.m.Count, sh.m.Stop))
		}
		shardReport = append(shardReport, map[string]any{
			"shard": sh.m.Index, "dir": sh.dir, "records": sh.records,
			"clock_offset_ns": sh.m.Clock.OffsetNs, "clock_rtt_ns": sh.m.Clock.RTTNs, "clock_measured": sh.m.Clock.Measured,
			"shift_ns": sh.shift, "stop": sh.m.Stop, "aborted": sh.m.Result.Aborted,
		})
	}
	return warnings, shardReport
}

// clearOut removes what a failed merge wrote: the folder when it created
// it, else everything in it (prepareOut saw it empty).
func clearOut(dir string, created bool) {
	if created {
		os.RemoveAll(dir)
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// shardDir is one shard folder being merged.
type shardDir struct {
	dir string
	m   *ShardManifest
	// shift is added to the shard's record timestamps (ns) to put them on
	// shard 0's clock.
	shift   int64
	records int
}

// checkShards reads every manifest and refuses what is not one run's
// complete set of shards; it returns them in shard order.
func checkShards(in MergeInput) ([]*shardDir, error) {
	if in.Dir == "" {
		return nil, fmt.Errorf("%w: no output folder", ErrMerge)
	}
	if len(in.Shards) == 0 {
		return nil, fmt.Errorf("%w: no shard folder", ErrMerge)
	}
	var shards []*shardDir
	for _, d := range in.Shards {
		m, err := ReadShardManifest(d)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMerge, err)
		}
		shards = append(shards, &shardDir{dir: d, m: m})
	}
	first := shards[0]
	for _, sh := range shards[1:] {
		a, b := first.m, sh.m
		diff := func(what, x, y string) error {
			return fmt.Errorf("%w: %s and %s are not shards of one run: %s %s vs %s", ErrMerge, first.dir, sh.dir, what, x, y)
		}
		switch {
		case a.RunID != b.RunID:
			return nil, diff("run id", a.RunID, b.RunID)
		case a.Seed != b.Seed:
			return nil, diff("seed", strconv.FormatInt(a.Seed, 10), strconv.FormatInt(b.Seed, 10))
		case !slices.Equal(a.Argv, b.Argv):
			return nil, diff("command line", strconv.Quote(strings.Join(a.Argv, " ")), strconv.Quote(strings.Join(b.Argv, " ")))
		case a.CorpusDigest != b.CorpusDigest:
			return nil, diff("corpus digest", a.CorpusDigest, b.CorpusDigest)
		case a.Count != b.Count:
			return nil, diff("shard count", strconv.Itoa(a.Count), strconv.Itoa(b.Count))
		case a.Finish.Concurrency != b.Finish.Concurrency:
			return nil, diff("lanes (--concurrency)", strconv.Itoa(a.Finish.Concurrency), strconv.Itoa(b.Finish.Concurrency))
		}
	}
	byIndex := map[int]*shardDir{}
	for _, sh := range shards {
		if o := byIndex[sh.m.Index]; o != nil {
			return nil, fmt.Errorf("%w: %s and %s are both shard %d/%d", ErrMerge, o.dir, sh.dir, sh.m.Index, sh.m.Count)
		}
		byIndex[sh.m.Index] = sh
	}
	var missing []string
	for i := range first.m.Count {
		if byIndex[i] == nil {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: run %s has %d shards; missing shard %s (each shard's folder is needed: a shard that was killed writes no manifest, and its run cannot be merged exactly)",
			ErrMerge, first.m.RunID, first.m.Count, strings.Join(missing, ", "))
	}
	slices.SortFunc(shards, func(a, b *shardDir) int { return a.m.Index - b.m.Index })
	for _, sh := range shards {
		// A clock offset is applied only when it is larger than what the
		// measurement can tell (half its round trip).
		if c := sh.m.Clock; c.Measured && abs64(c.OffsetNs) > c.RTTNs/2 {
			sh.shift = -c.OffsetNs
		}
	}
	return shards, nil
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// prepareOut creates the merged folder, refusing one that holds files or
// is one of the shard folders; created says it did not exist.
func prepareOut(dir string, shards []string) (created bool, err error) {
	abs, _ := filepath.Abs(dir)
	for _, s := range shards {
		if a, _ := filepath.Abs(s); a == abs {
			return false, fmt.Errorf("%w: the output folder %s is one of the shard folders", ErrMerge, dir)
		}
	}
	ents, err := os.ReadDir(dir)
	if err == nil && len(ents) > 0 {
		return false, fmt.Errorf("%w: the output folder %s is not empty: merge writes a new folder", ErrMerge, dir)
	}
	created = errors.Is(err, os.ErrNotExist)
	return created, os.MkdirAll(dir, 0o755)
}

// mergeResults combines the shards' Results into the merged run's
// (replay.Result.Merge: sums of what each shard counted, the corpus-level
// figures once, the earliest start and the latest end, the first abort,
// the one the others were stopped by), each shard's times first put on
// shard 0's clock and its abort message prefixed with the shard; the
// start turns by global lane.
func mergeResults(shards []*shardDir) *replay.Result {
	shifted := func(t time.Time, d int64) time.Time {
		if t.IsZero() {
			return t
		}
		return t.Add(time.Duration(d))
	}
	n := shards[0].m.Count
	var out *replay.Result
	for _, sh := range shards {
		r, d := *sh.m.Result, sh.shift
		for _, t := range []*time.Time{&r.StartTime, &r.WarmupStart, &r.ProfilingEnd, &r.EndTime, &r.LastTTFT, &r.LastITL, &r.LastContent} {
			*t = shifted(*t, d)
		}
		if r.Aborted != "" {
			r.AbortMessage = fmt.Sprintf("shard %d/%d: %s", sh.m.Index, n, r.AbortMessage)
		}
		if out == nil {
			out = &r
			continue
		}
		out.Merge(&r)
	}
	// The shard's lanes in global order: sh.m.Index, +n, +2n, …
	lanes := shards[0].m.Finish.Concurrency
	out.StartTurns = make([]int, lanes)
	for _, sh := range shards {
		for j, k := range sh.m.Result.StartTurns {
			if g := sh.m.Index + j*n; g < lanes {
				out.StartTurns[g] = k
			}
		}
	}
	if out.Aborted == replay.AbortShardStopped {
		// What stopped the others may be a signal, which is no abort: a
		// shard cancelled without one (scancel, a time limit) names it.
		for _, sh := range shards {
			if r := sh.m.Result; r.Cancelled && r.Aborted == "" {
				out.Aborted, out.AbortMessage = "", ""
				out.EndReason, out.Terminated = r.EndReason, r.Terminated
				break
			}
		}
	}
	if out.Aborted != "" {
		out.EndedEarly = false
	}
	return out
}

// copyRecords appends the shard's record and overflow streams to the
// merged folder's (under their names before Finish), shifting the
// timestamps by sh.shift.
func (sh *shardDir) copyRecords(out string) error {
	for _, name := range []string{metrics.FileRecords, metrics.FileOverflow} {
		src := filepath.Join(sh.dir, name)
		n, err := appendShifted(src, filepath.Join(out, name+".partial"), sh.shift)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && name == metrics.FileOverflow {
				continue
			}
			if errors.Is(err, metrics.ErrBadExport) {
				// A shard's record file cut mid-line (the shard was killed
				// while it wrote) or otherwise malformed is bad input.
				return fmt.Errorf("%w: shard %d/%d: %w (the shard's folder is not a finished shard's: merge the run's shards once each has ended, or fix the line)", ErrMerge, sh.m.Index, sh.m.Count, err)
			}
			return fmt.Errorf("merge: %w", err)
		}
		if name == metrics.FileRecords {
			sh.records = n
		}
	}
	return nil
}

// appendShifted appends the records of src to dst, each timestamp moved
// by shift ns, and returns how many it appended. Each record is decoded
// and written again (metrics.ReadRecords, metrics.AppendRecordLine), so a
// malformed shard file stops the merge with its file, line and field.
func appendShifted(src, dst string, shift int64) (int, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	n := 0
	var line []byte
	_, err = metrics.ReadRecords(in, src, false, func(l *metrics.RecordLine) error {
		shiftTimes(&l.Record, shift)
		line = metrics.AppendRecordLine(line[:0], l)
		bw.Write(line)
		n++
		return nil
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// shiftTimes moves every timestamp of r that is set by shift ns (0 means
// "did not happen" and stays 0).
func shiftTimes(r *metrics.Record, shift int64) {
	for _, t := range [...]*int64{&r.CreditIssuedNs, &r.RequestStartNs, &r.RequestAckNs, &r.RequestEndNs, &r.CancellationNs} {
		if *t != 0 {
			*t += shift
		}
	}
}

// mergeLogs writes logs/aiperf.log of the merged folder: every shard's
// run log in shard order, each under a header naming it.
func mergeLogs(out string, shards []*shardDir) error {
	if err := os.MkdirAll(filepath.Join(out, "logs"), 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(out, "logs", "aiperf.log"))
	if err != nil {
		return err
	}
	for _, sh := range shards {
		fmt.Fprintf(f, "==== shard %d/%d of run %s: %s ====\n", sh.m.Index, sh.m.Count, sh.m.RunID, sh.dir)
		if in, err := os.Open(filepath.Join(sh.dir, "logs", "aiperf.log")); err == nil {
			io.Copy(f, in)
			in.Close()
		} else {
			fmt.Fprintf(f, "(no run log: %v)\n", err)
		}
	}
	return f.Close()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// mergeCollector is the Collector of a merge: the records are already in
// the merged folder's streams; Finish publishes them and computes the
// aggregates from them.
type mergeCollector struct {
	dir string
	opt metrics.ExportOptions
	err error
}

func (c *mergeCollector) Flush() error { return nil }
func (c *mergeCollector) Err() error   { return c.err }

// EachRequest reads the merged record stream (before Finish publishes it)
// for the figures.
func (c *mergeCollector) EachRequest(fn func(metrics.RequestRow)) {
	if err := metrics.EachRequestIn(filepath.Join(c.dir, metrics.FileRecords+".partial"), fn); err != nil && c.err == nil {
		c.err = fmt.Errorf("merge: read the merged records for the figures: %w", err)
	}
}

func (c *mergeCollector) Finish(info metrics.RunInfo) (*metrics.Summary, error) {
	for _, name := range []string{metrics.FileRecords, metrics.FileOverflow} {
		p := filepath.Join(c.dir, name)
		if err := os.Rename(p+".partial", p); err != nil {
			if errors.Is(err, os.ErrNotExist) && name == metrics.FileOverflow {
				// No shard had an overflow stream: an empty one, as a run
				// writes.
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
	}
	sum, err := metrics.FinishExport(c.dir, info, c.opt)
	return sum, errors.Join(c.err, err)
}
