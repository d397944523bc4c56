package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentperf/agentperf/dataset"
)

func init() {
	registerDataset(command{name: "info", summary: "print corpus statistics (counts, ISL/OSL/think time, context lengths, theoretical hit rate)", run: runDatasetInfo})
}

const datasetInfoExamples = `  # the built-in synthetic corpus
  agentperf dataset info --public-dataset synthetic

  # a local corpus file (JSONL, optionally .zst/.gz) or a directory of one-trace JSON files
  agentperf dataset info --input-file traces.jsonl.zst
  agentperf dataset info --input-file ./traces/

  # the InferenceX default corpus from the local HF hub cache, as a 128k server would see it
  agentperf dataset info --public-dataset semianalysis_cc_traces_weka_062126 --max-context-length 131072

  # machine-readable
  agentperf dataset info --input-file traces.jsonl --json | jq .stats.theoretical_prefix_cache_hit_rate

The corpus is opened like 'agentperf profile' opens it (same flags, same dataset cache).`

// datasetInfoReport is the --json output of dataset info.
type datasetInfoReport struct {
	Identity  dataset.Identity    `json:"identity"`
	Read      datasetInfoRead     `json:"read"`
	Selection dataset.SelectStats `json:"selection"`
	Stats     dataset.CorpusStats `json:"stats"`
}

type datasetInfoRead struct {
	Skipped     int      `json:"skipped_invalid_traces"`
	SkipReasons []string `json:"skip_reasons,omitempty"`
}

func runDatasetInfo(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("dataset info", "dataset info (--input-file PATH | --public-dataset ALIAS | --hf-dataset ORG/NAME[@REV]) [flags]", datasetInfoExamples, io.out)
	df := addDatasetFlags(fs)
	asJSON := fs.Bool("json", false, "print the statistics as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("dataset info: unexpected argument %q (pass the corpus with --input-file)", fs.Arg(0))
	}
	corpus, err := df.open(ctx, io)
	if err != nil {
		return err
	}
	defer corpus.Close()
	traces := corpus.Traces()
	ls := corpus.LoadStats()
	rep := datasetInfoReport{
		Identity:  corpus.Identity(),
		Read:      datasetInfoRead{Skipped: ls.Read.Skipped},
		Selection: ls.Select,
		Stats:     dataset.ComputeStats(traces),
	}
	for _, e := range ls.Read.Errors {
		rep.Read.SkipReasons = append(rep.Read.SkipReasons, e.Error())
	}
	if *asJSON {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		return jsonSafe(enc.Encode(rep))
	}
	return writeDatasetInfo(io.out, &rep)
}

func jsonSafe(err error) error {
	if err != nil {
		return fmt.Errorf("dataset info: %w", err)
	}
	return nil
}

// groupInt formats n with thousands separators.
func groupInt[T int | int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// tokens formats a token count as 8k, 128k, 1M.
func tokens(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n >= 1024 && n%1024 == 0:
		return strconv.Itoa(n>>10) + "k"
	}
	return strconv.Itoa(n)
}

func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case x == math.Trunc(x) && math.Abs(x) < 1e15:
		return strconv.FormatInt(int64(x), 10)
	case math.Abs(x) >= 1000:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// writeDatasetInfo prints rep as `dataset info` shows it: where the corpus
// comes from and its counts, the distributions, then the context-length
// histogram, the windows, the models and the theoretical hit rate.
func writeDatasetInfo(w io.Writer, rep *datasetInfoReport) error {
	if _, err := io.WriteString(w, datasetInfoHeader(rep)); err != nil {
		return err
	}
	if err := writeDistributions(w, &rep.Stats); err != nil {
		return err
	}
	_, err := io.WriteString(w, datasetInfoShape(&rep.Stats))
	return err
}

// datasetInfoHeader is the source, the selection and the counts.
func datasetInfoHeader(rep *datasetInfoReport) string {
	st := &rep.Stats
	id := &rep.Identity
	var b strings.Builder
	src := id.Path
	switch id.SourceType {
	case "hf":
		src = fmt.Sprintf("%s@%s (commit %s)\n                %s", id.HFRepo, id.HFRevision, id.HFCommit, id.Path)
	case "synthetic":
		src = id.Path + " (generated in memory)"
	}
	fmt.Fprintf(&b, "corpus          %s\n", src)
	if id.Loader != "" {
		fmt.Fprintf(&b, "loader          %s (%s)\n", id.Loader, id.SourceType)
	}
	if id.SHA256 != "" {
		fmt.Fprintf(&b, "sha256          %s\n", id.SHA256)
	}
	sel := rep.Selection
	if sel.Loaded > 0 {
		fmt.Fprintf(&b, "loaded          %d of %d traces", sel.Total, sel.Loaded+rep.Read.Skipped)
		var why []string
		if sel.DroppedOverContext > 0 {
			why = append(why, fmt.Sprintf("%d over --max-context-length", sel.DroppedOverContext))
		}
		if rep.Read.Skipped > 0 {
			why = append(why, fmt.Sprintf("%d skipped", rep.Read.Skipped))
		}
		if len(why) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(why, ", "))
		}
		b.WriteByte('\n')
	}
	if rep.Read.Skipped > 0 {
		fmt.Fprintf(&b, "skipped         %d invalid traces (--skip-invalid-traces)\n", rep.Read.Skipped)
		for _, r := range rep.Read.SkipReasons {
			fmt.Fprintf(&b, "                %s\n", r)
		}
	}
	fmt.Fprintf(&b, "traces          %s (%s with subagents)\n", groupInt(st.Traces), groupInt(st.TracesWithSubagents))
	fmt.Fprintf(&b, "requests        %s parent, %s subagent in %s subagent entries\n", groupInt(st.ParentRequests), groupInt(st.SubagentRequests), groupInt(st.SubagentEntries))
	fmt.Fprintf(&b, "hash ids        %s (%s distinct within their traces)\n", groupInt(st.HashIDs), groupInt(st.UniqueHashIDs))
	fmt.Fprintf(&b, "tokens          %s in, %s out\n\n", groupInt(st.InputTokens), groupInt(st.OutputTokens))
	return b.String()
}

// writeDistributions writes the table of per-trace and per-request
// distributions.
func writeDistributions(w io.Writer, st *dataset.CorpusStats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-16s\tcount\tmin\tmean\tp50\tp90\tp99\tmax\t\n", "")
	for _, row := range []struct {
		name string
		s    dataset.Summary
	}{
		{"turns per trace", st.RequestsPerTrace},
		{"ISL parent", st.ISL},
		{"OSL parent", st.OSL},
		{"ISL subagent", st.SubagentISL},
		{"OSL subagent", st.SubagentOSL},
		{"think time s", st.ThinkTime},
		{"api time s", st.APITime},
		{"ttft s", st.TTFT},
		{"trace span s", st.TraceDuration},
		{"peak context", st.PeakContext},
	} {
		if row.s.Count == 0 {
			fmt.Fprintf(tw, "%-16s\t0\t-\t-\t-\t-\t-\t-\t\n", row.name)
			continue
		}
		s := row.s
		fmt.Fprintf(tw, "%-16s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.name, s.Count, fmtNum(s.Min), fmtNum(s.Mean), fmtNum(s.P50), fmtNum(s.P90), fmtNum(s.P99), fmtNum(s.Max))
	}
	return tw.Flush()
}

// datasetInfoShape is the context-length histogram, the traces over each
// context window, the recorded models and the theoretical hit rate.
func datasetInfoShape(st *dataset.CorpusStats) string {
	var b strings.Builder
	b.WriteString("\ncontext length (in+out) per request\n")
	total := 0
	for _, h := range st.ContextHistogram {
		total += h.Count
	}
	lo := 0
	for _, h := range st.ContextHistogram {
		label := fmt.Sprintf("  (%s, %s]", tokens(lo), tokens(h.UpTo))
		if h.UpTo == 0 {
			label = fmt.Sprintf("  > %s", tokens(lo))
		}
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(h.Count) / float64(total)
		}
		fmt.Fprintf(&b, "%-18s %9s  %5.1f%%  %s\n", label, groupInt(h.Count), pct, strings.Repeat("#", int(math.Round(pct/2))))
		lo = h.UpTo
	}
	b.WriteString("\ntraces whose peak in+out exceeds a context window\n")
	for _, o := range st.TracesOver {
		fmt.Fprintf(&b, "  > %-6s (%d)  %s of %s\n", tokens(o.Window), o.Window, groupInt(o.Traces), groupInt(st.Traces))
	}
	if len(st.Models) > 0 {
		b.WriteString("\nrecorded models (requests)\n")
		for _, m := range st.Models {
			name := m.Model
			if name == "" {
				name = "(none)"
			}
			fmt.Fprintf(&b, "  %-32s %s\n", name, groupInt(m.Requests))
		}
	}
	h := st.TheoreticalHitRate
	fmt.Fprintf(&b, "\ntheoretical prefix-cache hit rate  %.2f%%  (%s of %s blocks)\n  definition %s\n",
		100*h.Rate, groupInt(h.Hits), groupInt(h.Total), h.Definition)
	return b.String()
}
