// Command comparekit is the measuring half of bench/compare. Subcommands:
//
//	comparekit measure -o RESULT.json -- COMMAND [ARGS…]
//	    runs COMMAND in its own process group and writes what it cost:
//	    start time (Unix ns, taken just before the exec), wall time, user
//	    and system CPU seconds of the whole process tree (getrusage of the
//	    reaped tree, or the sum sampled from /proc when that is larger, for
//	    descendants nobody waited for), and the peak over time of the sum
//	    of RSS (and of PSS, sampled less often) over every live process of
//	    the tree. The exit status of COMMAND is its own.
//
//	comparekit analyze -tool NAME -measure RESULT.json -simlog LOG.jsonl -artifacts DIR -corpus DIR
//	    joins a client's profile_export.jsonl with the simulator's request
//	    log (sim --request-log) by X-Request-ID and prints one JSON object:
//	    time from process start to the first request the server saw, CPU
//	    seconds per 1,000 requests the server completed, peak RSS/PSS, the
//	    profiling request rate the server saw, the TTFT error (client's
//	    first-token time − the server's first-content-byte time, per
//	    request), ISL fidelity (the server's template-free content token
//	    count against the trace's recorded `in`, per request), and the
//	    requests per phase and subagent requests.
//
//	comparekit table -rows ROWS.jsonl [labels…]
//	    renders analyze's rows as the markdown section bench/compare writes
//	    into bench/RESULTS.md.
//
// It is a benchmark harness, not part of CI.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: comparekit measure|analyze|table [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "measure":
		var code int
		code, err = measureCmd(os.Args[2:])
		if err == nil {
			os.Exit(code)
		}
	case "analyze":
		err = analyzeCmd(os.Args[2:])
	case "table":
		err = tableCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q (measure, analyze)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "comparekit:", err)
		os.Exit(2)
	}
}

// Measurement is what measure writes.
type Measurement struct {
	Command   []string `json:"command"`
	StartNs   int64    `json:"start_ns"`
	WallS     float64  `json:"wall_s"`
	UserS     float64  `json:"user_s"`
	SysS      float64  `json:"sys_s"`
	SampledS  float64  `json:"sampled_cpu_s"` // Σ utime+stime last seen per process
	PeakRSSkB int64    `json:"peak_rss_kb"`
	PeakPSSkB int64    `json:"peak_pss_kb"`
	MaxProcs  int      `json:"max_procs"`
	ExitCode  int      `json:"exit_code"`
	Killed    string   `json:"killed,omitempty"` // why measure stopped the tree
}

func measureCmd(args []string) (int, error) {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	out := fs.String("o", "", "write the measurement JSON here")
	maxPSS := fs.Int64("max-pss-mb", 0, "stop the tree (SIGINT, then SIGKILL after 20 s) when its PSS exceeds this (0 = no limit; the machine is shared)")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	argv := fs.Args()
	if *out == "" || len(argv) == 0 {
		return 0, errors.New("measure: -o FILE and a command after -- are required")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	m := Measurement{Command: argv}
	start := time.Now()
	m.StartNs = start.UnixNano()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	root := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	ticks := map[int]int64{} // pid → utime+stime (clock ticks), last seen
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var werr error
	for n := 0; ; n++ {
		select {
		case werr = <-done:
		case s := <-sig:
			syscall.Kill(-root, s.(syscall.Signal)) //nolint:errcheck // forwarded best effort
			continue
		case <-tick.C:
			pids := tree(root)
			m.MaxProcs = max(m.MaxProcs, len(pids))
			var rss, pss int64
			for _, p := range pids {
				if t, ok := cpuTicks(p); ok {
					ticks[p] = t
				}
				rss += rssKB(p)
				if n%10 == 0 {
					pss += pssKB(p)
				}
			}
			m.PeakRSSkB = max(m.PeakRSSkB, rss)
			if n%10 == 0 {
				m.PeakPSSkB = max(m.PeakPSSkB, pss)
				if *maxPSS > 0 && pss/1024 > *maxPSS && m.Killed == "" {
					m.Killed = fmt.Sprintf("stopped by the harness: the process tree's PSS reached %d MB (limit %d MB, -max-pss-mb)", pss/1024, *maxPSS)
					syscall.Kill(-root, syscall.SIGINT)                                             //nolint:errcheck // best effort
					time.AfterFunc(20*time.Second, func() { syscall.Kill(-root, syscall.SIGKILL) }) //nolint:errcheck // best effort
				}
			}
			continue
		}
		break
	}
	m.WallS = time.Since(start).Seconds()
	if ps := cmd.ProcessState; ps != nil {
		m.UserS, m.SysS = ps.UserTime().Seconds(), ps.SystemTime().Seconds()
		m.ExitCode = ps.ExitCode()
	}
	var sum int64
	for _, t := range ticks {
		sum += t
	}
	m.SampledS = float64(sum) / 100 // USER_HZ
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return 0, werr
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		return 0, err
	}
	if m.ExitCode < 0 {
		return 1, nil
	}
	return m.ExitCode, nil
}

// tree returns root and its live descendants.
func tree(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []int{root}
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := ppid(pid); ok {
			children[pp] = append(children[pp], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// statFields returns the fields of /proc/pid/stat after the command name.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

func ppid(pid int) (int, bool) {
	f := statFields(pid)
	if len(f) < 2 {
		return 0, false
	}
	p, err := strconv.Atoi(f[1])
	return p, err == nil
}

func cpuTicks(pid int) (int64, bool) {
	f := statFields(pid) // f[11] utime, f[12] stime (fields 14 and 15 of stat)
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + s, err1 == nil && err2 == nil
}

func rssKB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize()) / 1024
}

func pssKB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Pss:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				v, _ := strconv.ParseInt(f[1], 10, 64)
				return v
			}
		}
	}
	return 0
}

// ---------------------------------------------------------------- analyze

// simLine is one line of sim --request-log.
type simLine struct {
	ArrivalNs     int64  `json:"arrival_ns"`
	RequestID     string `json:"x_request_id"`
	PromptTokens  int    `json:"prompt_tokens"`
	ContentTokens int    `json:"content_tokens"`
	FirstByteNs   int64  `json:"first_byte_ns"`
	Status        int    `json:"status"`
}

// record is the part of a profile_export.jsonl line both tools write.
type record struct {
	Metadata struct {
		XRequestID     string `json:"x_request_id"`
		ConversationID string `json:"conversation_id"`
		TurnIndex      int    `json:"turn_index"`
		SourceTraceID  string `json:"source_trace_id"`
		SourceOuterIdx *int   `json:"source_outer_idx"`
		SourceInnerIdx *int   `json:"source_inner_idx"`
		SourceKind     string `json:"source_kind"`
		AgentDepth     int    `json:"agent_depth"`
		RequestStartNs int64  `json:"request_start_ns"`
		RequestEndNs   int64  `json:"request_end_ns"`
		Phase          string `json:"benchmark_phase"`
		WasCancelled   bool   `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics map[string]struct {
		Value json.RawMessage `json:"value"`
	} `json:"metrics"`
	Error json.RawMessage `json:"error"`
}

func (r *record) metric(tag string) (float64, bool) {
	m, ok := r.Metrics[tag]
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m.Value), 64)
	return v, err == nil
}

// Row is what analyze prints.
type Row struct {
	Tool          string  `json:"tool"`
	StartupMs     float64 `json:"startup_ms"` // process start → first request the server saw; NaN none
	ServerSeen    int     `json:"server_requests"`
	ServerOK      int     `json:"server_completed"`
	CPUS          float64 `json:"cpu_s"`
	CPUPer1k      float64 `json:"cpu_s_per_1k"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	PeakPSSMB     float64 `json:"peak_pss_mb"`
	WallS         float64 `json:"wall_s"`
	ProfRate      float64 `json:"profiling_req_per_s"` // server-side: profiling requests / their span
	Records       int     `json:"records"`
	Warmup        int     `json:"warmup_records"`
	Profiling     int     `json:"profiling_records"`
	Errors        int     `json:"error_records"`
	Cancelled     int     `json:"cancelled_records"`
	Subagent      int     `json:"subagent_records"`
	Unmatched     int     `json:"records_without_server_line"`
	TTFTn         int     `json:"ttft_n"`
	TTFTErrP50    float64 `json:"ttft_err_p50_ms"`
	TTFTErrP99    float64 `json:"ttft_err_p99_ms"`
	ISLn          int     `json:"isl_n"`
	ISLMAE        float64 `json:"isl_mean_abs_err"`
	ISLExact      float64 `json:"isl_exact_share"`
	ISLMeanSigned float64 `json:"isl_mean_signed_err"`
	ISLTemplate   float64 `json:"template_tokens_mean"`
	ExitCode      int     `json:"exit_code"`
}

func analyzeCmd(args []string) error {
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	tool := fs.String("tool", "", "agentperf or aiperf (how a record names its trace request)")
	mpath := fs.String("measure", "", "measure's RESULT.json")
	simlog := fs.String("simlog", "", "the simulator's --request-log")
	dir := fs.String("artifacts", "", "the client's artifact directory (profile_export.jsonl)")
	corpus := fs.String("corpus", "", "the corpus directory (one trace per .json file)")
	mode := fs.String("mode", "", "label: timed or zero")
	conc := fs.Int("conc", 0, "label: concurrency")
	cache := fs.String("cache", "", "label: cold or warm")
	note := fs.String("note", "", "label: what went wrong, if anything")
	clientLog := fs.String("client-log", "", "the client's output (agentperf logs how many subagent requests it skipped)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var m Measurement
	if err := readJSON(*mpath, &m); err != nil {
		return err
	}
	if m.Killed != "" && *note == "" {
		*note = m.Killed
	}
	row := Row{Tool: *tool, StartupMs: math.NaN(), ExitCode: m.ExitCode, CPUS: max(m.UserS+m.SysS, m.SampledS),
		PeakRSSMB: float64(m.PeakRSSkB) / 1024, PeakPSSMB: float64(m.PeakPSSkB) / 1024, WallS: m.WallS}

	server := map[string]*simLine{}
	var first int64
	err := eachLine(*simlog, func(b []byte) error {
		var l simLine
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		row.ServerSeen++
		if l.Status == 200 && l.FirstByteNs > 0 {
			row.ServerOK++
		}
		if first == 0 || l.ArrivalNs < first {
			first = l.ArrivalNs
		}
		if l.RequestID != "" {
			server[l.RequestID] = &l
		}
		return nil
	})
	if err != nil {
		return err
	}
	if first > 0 {
		row.StartupMs = float64(first-m.StartNs) / 1e6
	}
	if row.ServerOK > 0 {
		row.CPUPer1k = row.CPUS / float64(row.ServerOK) * 1000
	}

	ins, err := recordedIns(*corpus)
	if err != nil {
		return err
	}
	var ttftErr, islAbs []float64
	var islSigned, tmpl float64
	exact := 0
	var profFirst, profLast int64 = math.MaxInt64, 0
	profSeen := 0
	rpath := filepath.Join(*dir, "profile_export.jsonl")
	if _, err := os.Stat(rpath); err == nil {
		err = eachLine(rpath, func(b []byte) error {
			var r record
			if err := json.Unmarshal(b, &r); err != nil {
				return err
			}
			md := &r.Metadata
			row.Records++
			switch md.Phase {
			case "warmup":
				row.Warmup++
			case "profiling":
				row.Profiling++
			}
			if md.AgentDepth > 0 || strings.Contains(md.SourceKind, "sub") {
				row.Subagent++
			}
			failed := len(r.Error) > 0 && string(r.Error) != "null"
			switch {
			case md.WasCancelled:
				row.Cancelled++
			case failed:
				row.Errors++
			}
			s := server[md.XRequestID]
			if s == nil {
				row.Unmatched++
				return nil
			}
			if md.Phase == "profiling" {
				profSeen++
				profFirst = min(profFirst, s.ArrivalNs)
				profLast = max(profLast, max(s.ArrivalNs, md.RequestEndNs))
			}
			if failed || md.WasCancelled {
				return nil
			}
			if ttft, ok := r.metric("time_to_first_token"); ok && s.FirstByteNs > 0 && md.RequestStartNs > 0 {
				clientFirst := float64(md.RequestStartNs) + ttft*1e6
				ttftErr = append(ttftErr, (clientFirst-float64(s.FirstByteNs))/1e6)
			}
			if in, ok := ins.lookup(*tool, md.AgentDepth, md.SourceTraceID, md.ConversationID, md.SourceOuterIdx, md.SourceInnerIdx, md.TurnIndex); ok && s.ContentTokens >= 0 {
				d := float64(s.ContentTokens - in)
				islAbs = append(islAbs, math.Abs(d))
				islSigned += d
				tmpl += float64(s.PromptTokens - s.ContentTokens)
				if d == 0 {
					exact++
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if profSeen > 1 && profLast > profFirst {
		row.ProfRate = float64(profSeen) / (float64(profLast-profFirst) / 1e9)
	}
	row.TTFTn = len(ttftErr)
	row.TTFTErrP50, row.TTFTErrP99 = pct(ttftErr, 50), pct(ttftErr, 99)
	row.ISLn = len(islAbs)
	if n := float64(len(islAbs)); n > 0 {
		var s float64
		for _, x := range islAbs {
			s += x
		}
		row.ISLMAE, row.ISLExact, row.ISLMeanSigned, row.ISLTemplate = s/n, float64(exact)/n, islSigned/n, tmpl/n
	} else {
		row.ISLMAE, row.ISLExact, row.ISLMeanSigned, row.ISLTemplate = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	out := nanToNull(row)
	if *clientLog != "" {
		if b, err := os.ReadFile(*clientLog); err == nil {
			if m := skippedRe.FindSubmatch(b); m != nil {
				out["skipped_subagent_requests"], _ = strconv.Atoi(string(m[1]))
			}
		}
	}
	out["mode"], out["conc"], out["cache"], out["note"] = *mode, *conc, *cache, *note
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

// skippedRe finds agentperf's "skipping N subagent requests" log line.
var skippedRe = regexp.MustCompile(`skipping (\d+) subagent requests`)

// nanToNull returns row as a map with NaN values replaced by nil (JSON
// has no NaN).
func nanToNull(row Row) map[string]any {
	out := map[string]any{}
	v := func(x float64) any {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	}
	out["tool"] = row.Tool
	out["startup_ms"] = v(row.StartupMs)
	out["server_requests"] = row.ServerSeen
	out["server_completed"] = row.ServerOK
	out["cpu_s"] = row.CPUS
	out["cpu_s_per_1k"] = v(row.CPUPer1k)
	out["peak_rss_mb"] = row.PeakRSSMB
	out["peak_pss_mb"] = row.PeakPSSMB
	out["wall_s"] = row.WallS
	out["profiling_req_per_s"] = row.ProfRate
	out["records"] = row.Records
	out["warmup_records"] = row.Warmup
	out["profiling_records"] = row.Profiling
	out["error_records"] = row.Errors
	out["cancelled_records"] = row.Cancelled
	out["subagent_records"] = row.Subagent
	out["records_without_server_line"] = row.Unmatched
	out["ttft_n"] = row.TTFTn
	out["ttft_err_p50_ms"] = v(row.TTFTErrP50)
	out["ttft_err_p99_ms"] = v(row.TTFTErrP99)
	out["isl_n"] = row.ISLn
	out["isl_mean_abs_err"] = v(row.ISLMAE)
	out["isl_exact_share"] = v(row.ISLExact)
	out["isl_mean_signed_err"] = v(row.ISLMeanSigned)
	out["template_tokens_mean"] = v(row.ISLTemplate)
	out["exit_code"] = row.ExitCode
	return out
}

// corpusIns holds each trace's recorded input lengths two ways: by raw
// position in its requests array (subagent entries included, their own
// requests nested), and by position among the parent's own requests.
type corpusIns struct {
	raw  map[string][]rawEntry
	main map[string][]int
}

type rawEntry struct {
	in     int   // -1 for a subagent entry
	nested []int // a subagent entry's requests' in
}

func (c *corpusIns) lookup(tool string, depth int, traceID, convID string, outer, inner *int, turn int) (int, bool) {
	id := traceID
	if id == "" {
		id = convID
	}
	switch {
	case tool == "agentperf" && depth == 0:
		// agentperf numbers a root conversation's requests among the
		// trace's own requests (subagent entries are not counted in its
		// turn index).
		m := c.main[id]
		if turn >= 0 && turn < len(m) {
			return m[turn], true
		}
	default:
		// aiperf (and agentperf for a subagent's request) names the raw
		// position in the trace's request list, and the position inside a
		// subagent entry.
		r := c.raw[id]
		if outer == nil || *outer < 0 || *outer >= len(r) {
			return 0, false
		}
		e := r[*outer]
		if inner != nil && *inner >= 0 {
			if *inner < len(e.nested) {
				return e.nested[*inner], true
			}
			return 0, false
		}
		if e.in >= 0 {
			return e.in, true
		}
	}
	return 0, false
}

func recordedIns(dir string) (*corpusIns, error) {
	c := &corpusIns{raw: map[string][]rawEntry{}, main: map[string][]int{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no trace files (*.json) in %s", dir)
	}
	for _, f := range files {
		var t struct {
			ID       string `json:"id"`
			Requests []struct {
				Type     string `json:"type"`
				In       int    `json:"in"`
				Requests []struct {
					In int `json:"in"`
				} `json:"requests"`
			} `json:"requests"`
		}
		if err := readJSON(f, &t); err != nil {
			return nil, err
		}
		for _, r := range t.Requests {
			if r.Type == "subagent" {
				e := rawEntry{in: -1}
				for _, s := range r.Requests {
					e.nested = append(e.nested, s.In)
				}
				c.raw[t.ID] = append(c.raw[t.ID], e)
				continue
			}
			c.raw[t.ID] = append(c.raw[t.ID], rawEntry{in: r.In})
			c.main[t.ID] = append(c.main[t.ID], r.In)
		}
	}
	return c, nil
}

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	x := p / 100 * float64(len(s)-1)
	i := int(x)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (x-float64(i))*(s[i+1]-s[i])
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}
