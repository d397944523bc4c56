package ui

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// dashboardView runs the full-screen dashboard (bubbletea, alternate
// screen). It takes no keyboard input: the terminal stays in cooked mode,
// so Ctrl-C is a SIGINT handled by the process as without a dashboard
// (the first drains the run, the second exits).
type dashboardView struct {
	opt  Options
	prog *tea.Program

	mu     sync.Mutex
	logs   [][]byte // every log line, printed again after the alternate screen
	final  []string // the last block, printed after the alternate screen
	err    error
	done   chan struct{}
	once   sync.Once
	kindOf string
}

// Messages of the dashboard's program.
type (
	tickMsg struct{}
	logMsg  string
	stopMsg struct{}
)

func startDashboard(tr *Tracker, opt Options) *dashboardView {
	v := &dashboardView{opt: opt, done: make(chan struct{}), kindOf: "dashboard"}
	r := lipgloss.NewRenderer(opt.Out, termenv.WithColorCache(true))
	m := &model{tr: tr, opt: opt, st: newStyles(r), view: v}
	if w, h, err := opt.Size(); err == nil {
		m.w, m.h = w, h
	}
	m.snap = tr.Update()
	v.prog = tea.NewProgram(m, tea.WithOutput(opt.Out), tea.WithInput(nil), tea.WithAltScreen(),
		tea.WithoutSignalHandler(), tea.WithoutCatchPanics(), tea.WithFPS(10))
	go func() {
		defer close(v.done)
		if _, err := v.prog.Run(); err != nil {
			v.mu.Lock()
			v.err = fmt.Errorf("dashboard: %w", err)
			v.mu.Unlock()
		}
	}()
	if opt.Tick != nil {
		go func() {
			for range opt.Tick {
				v.prog.Send(tickMsg{})
			}
		}()
	}
	return v
}

func (v *dashboardView) Kind() string { return v.kindOf }

// Log returns a writer whose lines appear in the dashboard's log pane.
func (v *dashboardView) Log() io.Writer {
	return logFunc(func(p []byte) {
		v.mu.Lock()
		v.logs = append(v.logs, p)
		v.mu.Unlock()
		select {
		case <-v.done:
			v.opt.Out.Write(p)
		default:
			v.prog.Send(logMsg(strings.TrimRight(string(p), "\n")))
		}
	})
}

// Stop takes a last sample, leaves the alternate screen and prints the log
// lines and the final state to the normal screen, so the scrollback keeps
// them.
func (v *dashboardView) Stop() error {
	v.once.Do(func() {
		v.prog.Send(stopMsg{})
		<-v.done
		v.mu.Lock()
		defer v.mu.Unlock()
		var b strings.Builder
		for _, l := range v.logs {
			b.Write(l)
		}
		for _, l := range v.final {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		if _, err := io.WriteString(v.opt.Out, b.String()); err != nil && v.err == nil {
			v.err = err
		}
	})
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err
}

// styles are the dashboard's colours.
type styles struct {
	title, label, dim, warn, good, box, barFill, barTodo, mark lipgloss.Style
}

func newStyles(r *lipgloss.Renderer) styles {
	return styles{
		title:   r.NewStyle().Bold(true).Foreground(lipgloss.Color("12")),
		label:   r.NewStyle().Bold(true),
		dim:     r.NewStyle().Foreground(lipgloss.Color("8")),
		warn:    r.NewStyle().Bold(true).Foreground(lipgloss.Color("11")),
		good:    r.NewStyle().Foreground(lipgloss.Color("10")),
		box:     r.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("8")),
		barFill: r.NewStyle().Foreground(lipgloss.Color("12")),
		barTodo: r.NewStyle().Foreground(lipgloss.Color("8")),
		mark:    r.NewStyle().Foreground(lipgloss.Color("14")),
	}
}

// model is the dashboard's bubbletea model.
type model struct {
	tr   *Tracker
	opt  Options
	st   styles
	view *dashboardView
	snap Snapshot
	logs []string
	w, h int
}

func (m *model) Init() tea.Cmd {
	if m.opt.Tick != nil {
		return nil
	}
	return m.tick()
}

func (m *model) tick() tea.Cmd {
	return tea.Tick(m.opt.Refresh, func(time.Time) tea.Msg { return tickMsg{} })
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case tickMsg:
		prev := m.snap
		m.snap = m.tr.Update()
		var cmds []tea.Cmd
		if repaint(&prev, &m.snap) {
			cmds = append(cmds, tea.ClearScreen)
		}
		if m.opt.Tick == nil {
			cmds = append(cmds, m.tick())
		}
		return m, tea.Batch(cmds...)
	case logMsg:
		m.logs = append(m.logs, string(msg))
		if len(m.logs) > 100 {
			m.logs = m.logs[len(m.logs)-100:]
		}
	case stopMsg:
		m.tr.finish()
		m.snap = m.tr.Update()
		m.view.mu.Lock()
		m.view.final = Block(&m.snap, m.opt.BarWidth)
		m.view.mu.Unlock()
		return m, tea.Quit
	}
	return m, nil
}

// repaint reports whether the next frame must be drawn whole rather than
// as the lines that changed: when the phase or the stop state changes, and
// on every frame once the user interrupted the run. The process writes its
// signal notes and the terminal echoes ^C on the screen the dashboard
// owns, which shifts it; a frame drawn line by line over that would leave
// stale rows beside the new ones.
func repaint(prev, cur *Snapshot) bool {
	return false && prev.Phase != cur.Phase || prev.Interrupted != cur.Interrupted || prev.Killed != cur.Killed || cur.Interrupted
}

// View draws the dashboard; a window smaller than MinWidth×MinHeight gets
// the simple view's block instead.
func (m *model) View() string {
	s := &m.snap
	if m.w < MinWidth || m.h < MinHeight {
		return strings.Join(Block(s, min(m.opt.BarWidth, max(10, m.w-30))), "\n")
	}
	w := m.w
	var lines []string
	add := func(l string) { lines = append(lines, lipgloss.NewStyle().MaxWidth(w).Render(l)) }

	add(m.st.title.Render("agentperf") + "  " + m.st.label.Render(phaseText(s)) + m.st.dim.Render(fmt.Sprintf("  (elapsed %s)", clock(s.Elapsed))))
	// The bars leave room for the longest tail ("12/64  ETA unknown …").
	barW := min(60, max(10, w-10-5-62))
	if s.WarmupTotal > 0 {
		frac := float64(s.WarmupDone) / float64(s.WarmupTotal)
		tail := etaText(s)
		if !s.ProfilingStart.IsZero() {
			tail = "took " + clock(s.WarmupTook)
		}
		add(fmt.Sprintf("%s %s %d/%d  %s", m.st.label.Render("warmup   "), m.bar(frac, barW), s.WarmupDone, s.WarmupTotal, tail))
	} else {
		add(m.st.label.Render("warmup   ") + m.st.dim.Render(" not started"))
	}
	if !s.ProfilingStart.IsZero() && s.ProfilingDuration > 0 {
		frac := float64(s.ProfilingElapsed) / float64(s.ProfilingDuration)
		left := clock(s.ProfilingLeft) + " left"
		if s.ProfilingLeft < 0 {
			left = "stopped early" // interrupted: no countdown
		}
		add(fmt.Sprintf("%s %s %s / %s  %s", m.st.label.Render("profiling"), m.bar(frac, barW),
			clock(min(s.ProfilingElapsed, s.ProfilingDuration)), clock(s.ProfilingDuration), left))
	} else if !s.ProfilingStart.IsZero() {
		add(fmt.Sprintf("%s %s elapsed", m.st.label.Render("profiling"), clock(s.ProfilingElapsed)))
	} else {
		add(m.st.label.Render("profiling") + m.st.dim.Render(fmt.Sprintf(" starts after warmup; %s", clock(s.ProfilingDuration))))
	}
	c := s.Counts()
	add(fmt.Sprintf("%s ok %d  errors %d  overflows %d  cancelled %d  in flight %d %s", m.st.label.Render("requests "),
		c.OK, c.Errors, c.Overflows, c.Cancelled, s.InFlight, m.st.dim.Render(phaseLabel(s))))
	win := m.st.dim.Render("(" + windowText(s) + ")")
	add(fmt.Sprintf("%s %s req/s  %s output tok/s %s", m.st.label.Render("rate     "), rate(s.Client.RequestsPerSec),
		rate(s.Client.OutputTokensPerSec), win))
	if s.Streaming {
		cl := &s.Client
		add(fmt.Sprintf("%s TTFT p50 %s  p99 %s   ITL p50 %s  p99 %s %s", m.st.label.Render("latency  "), ms(cl.TTFTP50), ms(cl.TTFTP99), ms(cl.ITLP50), ms(cl.ITLP99), win))
	} else {
		add(m.st.label.Render("latency  ") + m.st.dim.Render(" TTFT/ITL n/a (not streaming)"))
	}
	add(m.st.label.Render("server   ") + " " + m.serverLine(s, w >= 100))
	add(m.st.label.Render("cache    ") + " " + m.cacheLine(s, w >= 120))
	if s.GPU.Valid {
		add(m.st.label.Render("gpu      ") + " " + m.gpuLine(s, w))
	}
	if d := s.Diagnosis; d != "" {
		// The figures in parentheses are on the server line too: they go
		// first when the window is narrow.
		if i := strings.Index(d, " ("); i > 0 && lipgloss.Width(d)+2 > w {
			d = d[:i]
		}
		add(m.st.warn.Render("⚠ " + d))
	} else {
		add(m.st.dim.Render("no bottleneck identified"))
	}

	// Charts take what is left after the header, the log pane and the
	// footer.
	logN := min(6, max(2, (m.h-24)/4+2))
	chartH := m.h - len(lines) - logN - 1 - 1 // log title, footer
	boxH := chartH / 2
	colW := w / 2
	hs := &m.tr.History
	ttftTitle := "TTFT p50 (ms, 10 s window)"
	if !s.Streaming {
		ttftTitle = "TTFT (not streaming)"
	}
	row1 := lipgloss.JoinHorizontal(lipgloss.Top,
		m.chart(ttftTitle, hs.TTFTP50.Points, colW, boxH, 0, ms),
		m.chart("output tok/s (10 s window)", hs.Throughput.Points, w-colW, boxH, 0, rate))
	row2 := lipgloss.JoinHorizontal(lipgloss.Top,
		m.chart("GPU KV usage (%)", hs.KVUsage.Points, colW, chartH-boxH, 100, pctPlain),
		m.chart("GPU prefix-cache hit (%, server)", hs.HitRate.Points, w-colW, chartH-boxH, 100, pctPlain))
	lines = append(lines, row1, row2)

	lines = append(lines, m.st.dim.Render(strings.Repeat("─", 2)+" log "+strings.Repeat("─", max(0, w-7))))
	tail := m.logs[max(0, len(m.logs)-logN):]
	for i := range logN {
		l := ""
		if i < len(tail) {
			l = tail[i]
		}
		add(l)
	}
	add(m.st.dim.Render(footer(s, w)))
	return strings.Join(lines, "\n")
}

// footer says what the next Ctrl-C does (the process's signal handling:
// the first stops gracefully, the second cancels the requests in flight and
// still writes every artifact, the third exits at once); the long form
// when it fits in w cells.
func footer(s *Snapshot, w int) string {
	var long, short string
	switch {
	case s.Phase == PhaseDone:
		long = "Run over: writing the artifacts. Ctrl-C now exits at once (artifacts may be left .partial)."
		short = "Run over: writing artifacts. Ctrl-C: exit at once (.partial files)"
	case s.Killed:
		long = "Cancelling the requests in flight, then every artifact is written. Ctrl-C again: exit at once (artifacts may be left .partial)."
		short = "Cancelling in-flight requests. Ctrl-C again: exit at once (.partial files)"
	case s.Interrupted:
		long = "Stopping: in-flight requests finish. Ctrl-C again: cancel them, still write every artifact; a third: exit at once."
		short = "Stopping. Ctrl-C again: cancel in flight, write all; 3rd: exit now"
	default:
		long = "Ctrl-C: 1st stops gracefully (in-flight requests finish); 2nd cancels those in flight, still writes every artifact; 3rd exits at once."
		short = "Ctrl-C: 1st graceful stop; 2nd cancel in flight, write all; 3rd exit now"
	}
	if lipgloss.Width(long) <= w {
		return long
	}
	return short
}

// serverLine is the server's figures; short abbreviates the labels for a
// narrow window.
func (m *model) serverLine(s *Snapshot, long bool) string {
	sv := &s.Server
	if !sv.Valid {
		return m.st.dim.Render(serverText(s))
	}
	run, wait, pre := "running", "waiting", "preemptions in all"
	if !long {
		run, wait, pre = "run", "wait", "preempt"
	}
	p := ""
	if !math.IsNaN(sv.PreemptionsTotal) {
		p = fmt.Sprintf("  %s %s", pre, count(sv.PreemptionsTotal))
	}
	return fmt.Sprintf("%s %s  %s %s  KV %s%s %s", run, count(sv.Running), wait, count(sv.Waiting), pct(sv.KVUsage), p, m.st.dim.Render("(now)"))
}

// gpuLine is the GPUs' summed power now, its sparkline over the run and
// the output tokens per joule (the client window's output tokens per
// second over the power now).
func (m *model) gpuLine(s *Snapshot, w int) string {
	head := fmt.Sprintf("%d GPUs, power %s W ", s.GPU.GPUs, count(s.GPU.PowerW))
	tail := fmt.Sprintf("  %s output tok/J %s", rate(s.TokensPerJoule()), m.st.dim.Render("(output tok/s ÷ power now)"))
	n := max(8, min(60, w-12-lipgloss.Width(head)-lipgloss.Width(tail)))
	return head + Sparkline(m.tr.History.Power.Points, n) + tail
}

// Sparkline draws the last n points of ps as a row of block characters
// scaled from their minimum to their maximum (a NaN point is a space).
func Sparkline(ps []Point, n int) string {
	if len(ps) > n {
		ps = ps[len(ps)-n:]
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range ps {
		if !math.IsNaN(p.V) {
			lo, hi = math.Min(lo, p.V), math.Max(hi, p.V)
		}
	}
	const bars = "▁▂▃▄▅▆▇█"
	r := []rune(bars)
	var b strings.Builder
	for _, p := range ps {
		switch {
		case math.IsNaN(p.V):
			b.WriteByte(' ')
		case hi <= lo:
			b.WriteRune(r[0])
		default:
			b.WriteRune(r[int(math.Round((p.V-lo)/(hi-lo)*float64(len(r)-1)))])
		}
	}
	return b.String()
}

// cacheLine is the server's GPU prefix-cache hit rate and the theoretical
// one, each with the window it covers; short abbreviates for a narrow
// window.
func (m *model) cacheLine(s *Snapshot, long bool) string {
	if long {
		return cacheText(s)
	}
	sv := &s.Server
	hit := "-"
	if sv.Valid {
		hit = pct(sv.HitRate)
		if sv.HitWindow > 0 {
			hit += " (server, " + sv.HitWindow.Round(time.Second).String() + ")"
		}
	}
	out := "GPU hit " + hit
	if th := s.Client.TheoreticalHitRate; !math.IsNaN(th) {
		out += "  theoretical " + pct(th) + " (" + windowText(s) + ")"
	}
	return out
}

func (m *model) bar(frac float64, width int) string {
	if math.IsNaN(frac) {
		frac = 0
	}
	frac = math.Max(0, math.Min(1, frac))
	full := int(math.Round(frac * float64(width)))
	return m.st.barFill.Render(strings.Repeat("█", full)) + m.st.barTodo.Render(strings.Repeat("░", width-full)) +
		fmt.Sprintf(" %3.0f%%", 100*frac)
}

// chart draws one boxed chart of outer size w×h; top > 0 fixes the scale
// (percentages end at 100). Otherwise, once profiling started, the scale
// comes from the profiling columns only: slow warmup requests are drawn
// (full columns when above the scale) but do not flatten the profiling
// ones.
func (m *model) chart(title string, ps []Point, w, h int, top float64, unit func(float64) string) string {
	inW, inH := max(1, w-2), max(1, h-2)
	plotH := max(1, inH-1)
	vals := columns(ps, inW)
	col := profilingColumn(ps, m.tr.History.ProfilingStart, inW)
	if top <= 0 {
		from := max(col, 0)
		top = niceTop(vals[from:])
	}
	// The header's second figure is the top of the drawn scale, not the
	// largest value: the scale follows the profiling columns, so a value
	// above it (a slow warmup request, a spike) is said to be.
	now := last(ps)
	head := fmt.Sprintf("%s  now %s", title, unit(now))
	scale := "  scale 0–" + unit(top)
	if now > top {
		scale = "  above the scale (0–" + unit(top) + ")"
	}
	if lipgloss.Width(head+scale) <= inW {
		head += scale
	}
	rows := chartRows(vals, plotH, top)
	// Mark where profiling started with a coloured column.
	if col >= 0 {
		for r := range rows {
			rr := []rune(rows[r])
			if col < len(rr) {
				ch := string(rr[col])
				if ch == " " {
					ch = "│"
				}
				rows[r] = string(rr[:col]) + m.st.mark.Render(ch) + string(rr[col+1:])
			}
		}
	}
	body := lipgloss.NewStyle().MaxWidth(inW).Render(head) + "\n" + strings.Join(rows, "\n")
	return m.st.box.Width(inW).Height(inH).MaxHeight(h).Render(body)
}

// profilingColumn is the column of w (as columns lays ps out) where
// profiling starts; -1 before it starts.
func profilingColumn(ps []Point, start time.Time, w int) int {
	if start.IsZero() || len(ps) == 0 {
		return -1
	}
	n := len(ps)
	for i, p := range ps {
		if !p.At.Before(start) {
			if n <= w {
				return i + w - n
			}
			return i * w / n
		}
	}
	return -1
}

// pctPlain formats a 0..100 value.
func pctPlain(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}
