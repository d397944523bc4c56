package dataset

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentperf/agentperf/internal/numfmt"
)

// Info describes a loaded corpus: where it comes from, what reading and
// selecting it kept, and its statistics. It is what `agentperf dataset
// info` prints (WriteText) or encodes as JSON.
type Info struct {
	Identity  Identity    `json:"identity"`
	Read      InfoRead    `json:"read"`
	Selection SelectStats `json:"selection"`
	Stats     CorpusStats `json:"stats"`
}

// InfoRead is what reading the source skipped (ReadOptions.SkipInvalid).
type InfoRead struct {
	Skipped     int      `json:"skipped_invalid_traces"`
	SkipReasons []string `json:"skip_reasons,omitempty"`
}

// NewInfo returns the Info of c (its statistics over every trace).
func NewInfo(c *Corpus) Info {
	ls := c.LoadStats()
	info := Info{
		Identity:  c.Identity(),
		Read:      InfoRead{Skipped: ls.Read.Skipped},
		Selection: ls.Select,
		Stats:     ComputeStats(c.Traces()),
	}
	for _, e := range ls.Read.Errors {
		info.Read.SkipReasons = append(info.Read.SkipReasons, e.Error())
	}
	return info
}

// WriteText prints info for people: where the corpus comes from and its
// counts, the distributions, then the context-length histogram, the
// windows, the models and the theoretical hit rate.
func (info *Info) WriteText(w io.Writer) error {
	if _, err := io.WriteString(w, info.header()); err != nil {
		return err
	}
	if err := writeDistributions(w, &info.Stats); err != nil {
		return err
	}
	_, err := io.WriteString(w, info.Stats.shape())
	return err
}

// WriteJSON encodes info as one indented JSON object (`agentperf dataset
// info --json`).
func (info *Info) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(info)
}

// header is the source, the selection and the counts.
func (info *Info) header() string {
	st := &info.Stats
	id := &info.Identity
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
	sel := info.Selection
	if sel.Loaded > 0 {
		fmt.Fprintf(&b, "loaded          %d of %d traces", sel.Total, sel.Loaded+info.Read.Skipped)
		var why []string
		if sel.DroppedOverContext > 0 {
			why = append(why, fmt.Sprintf("%d over --max-context-length", sel.DroppedOverContext))
		}
		if info.Read.Skipped > 0 {
			why = append(why, fmt.Sprintf("%d skipped", info.Read.Skipped))
		}
		if len(why) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(why, ", "))
		}
		b.WriteByte('\n')
	}
	if info.Read.Skipped > 0 {
		fmt.Fprintf(&b, "skipped         %d invalid traces (--skip-invalid-traces)\n", info.Read.Skipped)
		for _, r := range info.Read.SkipReasons {
			fmt.Fprintf(&b, "                %s\n", r)
		}
	}
	fmt.Fprintf(&b, "traces          %s (%s with subagents)\n", numfmt.Thousands(st.Traces), numfmt.Thousands(st.TracesWithSubagents))
	fmt.Fprintf(&b, "requests        %s parent, %s subagent in %s subagent entries\n", numfmt.Thousands(st.ParentRequests), numfmt.Thousands(st.SubagentRequests), numfmt.Thousands(st.SubagentEntries))
	fmt.Fprintf(&b, "hash ids        %s (%s distinct within their traces)\n", numfmt.Thousands(st.HashIDs), numfmt.Thousands(st.UniqueHashIDs))
	fmt.Fprintf(&b, "tokens          %s in, %s out\n\n", numfmt.Thousands(st.InputTokens), numfmt.Thousands(st.OutputTokens))
	return b.String()
}

// writeDistributions writes the table of per-trace and per-request
// distributions.
func writeDistributions(w io.Writer, st *CorpusStats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-16s\tcount\tmin\tmean\tp50\tp90\tp99\tmax\t\n", "")
	for _, row := range []struct {
		name string
		s    Summary
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
		fmt.Fprintf(tw, "%-16s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.name, s.Count, statNum(s.Min), statNum(s.Mean), statNum(s.P50), statNum(s.P90), statNum(s.P99), statNum(s.Max))
	}
	return tw.Flush()
}

// shape is the context-length histogram, the traces over each context
// window, the recorded models and the theoretical hit rate.
func (st *CorpusStats) shape() string {
	var b strings.Builder
	b.WriteString("\ncontext length (in+out) per request\n")
	total := 0
	for _, h := range st.ContextHistogram {
		total += h.Count
	}
	lo := 0
	for _, h := range st.ContextHistogram {
		label := fmt.Sprintf("  (%s, %s]", tokenCount(lo), tokenCount(h.UpTo))
		if h.UpTo == 0 {
			label = fmt.Sprintf("  > %s", tokenCount(lo))
		}
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(h.Count) / float64(total)
		}
		fmt.Fprintf(&b, "%-18s %9s  %5.1f%%  %s\n", label, numfmt.Thousands(h.Count), pct, strings.Repeat("#", int(math.Round(pct/2))))
		lo = h.UpTo
	}
	b.WriteString("\ntraces whose peak in+out exceeds a context window\n")
	for _, o := range st.TracesOver {
		fmt.Fprintf(&b, "  > %-6s (%d)  %s of %s\n", tokenCount(o.Window), o.Window, numfmt.Thousands(o.Traces), numfmt.Thousands(st.Traces))
	}
	if len(st.Models) > 0 {
		b.WriteString("\nrecorded models (requests)\n")
		for _, m := range st.Models {
			name := m.Model
			if name == "" {
				name = "(none)"
			}
			fmt.Fprintf(&b, "  %-32s %s\n", name, numfmt.Thousands(m.Requests))
		}
	}
	h := st.TheoreticalHitRate
	fmt.Fprintf(&b, "\ntheoretical prefix-cache hit rate  %.2f%%  (%s of %s blocks)\n  definition %s\n",
		100*h.Rate, numfmt.Thousands(h.Hits), numfmt.Thousands(h.Total), h.Definition)
	return b.String()
}

// tokenCount formats a token count as 8k, 128k, 1M (binary multiples, as
// context windows are written), else in full.
func tokenCount(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n >= 1024 && n%1024 == 0:
		return strconv.Itoa(n>>10) + "k"
	}
	return strconv.Itoa(n)
}

// statNum formats a distribution's figure: "-" for NaN, an integer in
// full, else 0, 1 or 2 decimals as the magnitude falls.
func statNum(x float64) string {
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
