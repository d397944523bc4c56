package ui

import (
	"bytes"
	"fmt"
	"github.com/agentperf/agentperf/internal/suggest"
	"io"
	"os"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"
	"golang.org/x/term"
)

// Type selects the live view (aiperf's --ui-type names).
type Type string

// The live views.
const (
	// TypeDashboard is a full-screen view with live charts; it falls back
	// to TypeSimple when Out is not a capable terminal or is too small.
	TypeDashboard Type = "dashboard"
	// TypeSimple redraws a block with progress bars on a terminal, and
	// prints one log line per interval elsewhere.
	TypeSimple Type = "simple"
	// TypeNone shows nothing live; log lines pass through.
	TypeNone Type = "none"
)

// Types lists the accepted --ui-type values.
var Types = []Type{TypeDashboard, TypeSimple, TypeNone}

// ParseType parses a --ui-type value. "auto" (agentperf's older default)
// means dashboard.
func ParseType(s string) (Type, error) {
	switch Type(s) {
	case TypeDashboard, "auto", "":
		return TypeDashboard, nil
	case TypeSimple, TypeNone:
		return Type(s), nil
	}
	return "", fmt.Errorf("--ui-type %q%s: want dashboard (full screen; default), simple (progress bars, or log lines when not on a terminal) or none", s, suggest.DidYouMean(s, []string{"dashboard", "simple", "none"}))
}

// Minimum terminal size of the dashboard; smaller windows get the simple
// view.
const (
	MinWidth  = 80
	MinHeight = 24
)

// DefaultInterval is the period of the simple view's log lines when
// Options.Interval is zero (the CLI's --stats-interval default).
const DefaultInterval = 10 * time.Second

// Options configure a view. Out is required.
type Options struct {
	// Out is where the view draws (the process's stderr).
	Out io.Writer
	// Interval is the period of the log lines of the simple view when Out
	// is not a terminal (0 = DefaultInterval).
	Interval time.Duration
	// Refresh is the redraw period on a terminal (default 1 s).
	Refresh time.Duration
	// Terminal overrides the detection of a capable terminal (a TTY whose
	// TERM is set and not "dumb"); nil means detect.
	Terminal *bool
	// Size returns the terminal's size (default: golang.org/x/term on Out).
	Size func() (width, height int, err error)
	// Getenv reads TERM (default os.Getenv).
	Getenv func(string) string
	// Tick, when set, drives the updates instead of a ticker (tests).
	Tick <-chan time.Time
	// BarWidth is the width of the simple view's bars (default 30).
	BarWidth int
}

// View is a running live view. Its methods are safe for concurrent use.
type View interface {
	// Log returns the writer for log lines while the view runs: the
	// dashboard shows them in its log pane (and prints them again when it
	// stops), the other views write them out without breaking the display.
	Log() io.Writer
	// Stop draws the last update, restores the terminal and returns once
	// the view has stopped. It may be called more than once.
	Stop() error
	// Kind names the view that runs, and why when it is not the one asked
	// for (e.g. "simple (TERM=dumb)").
	Kind() string
}

// Start starts the view of type typ over tr. The tracker is used only by
// the view's goroutine from then on.
func Start(typ Type, tr *Tracker, opt Options) View {
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	if opt.Refresh <= 0 {
		opt.Refresh = time.Second
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.BarWidth <= 0 {
		opt.BarWidth = 30
	}
	f, isFile := opt.Out.(*os.File)
	if opt.Size == nil {
		opt.Size = func() (int, int, error) {
			if !isFile {
				return 0, 0, fmt.Errorf("not a terminal")
			}
			return term.GetSize(int(f.Fd()))
		}
	}
	capable, why := true, ""
	if opt.Terminal != nil {
		capable = *opt.Terminal
		if !capable {
			why = "not a terminal"
		}
	} else {
		switch t := opt.Getenv("TERM"); {
		case !isFile || !term.IsTerminal(int(f.Fd())):
			capable, why = false, "not a terminal"
		case t == "" || t == "dumb":
			capable, why = false, "TERM="+t
		}
	}
	switch typ {
	case TypeNone:
		return &noneView{out: opt.Out}
	case TypeDashboard:
		if !capable {
			return startSimple(tr, opt, false, "simple ("+why+")")
		}
		if w, h, err := opt.Size(); err == nil && (w < MinWidth || h < MinHeight) {
			return startSimple(tr, opt, true, fmt.Sprintf("simple (window %d×%d is smaller than %d×%d)", w, h, MinWidth, MinHeight))
		}
		return startDashboard(tr, opt)
	}
	return startSimple(tr, opt, capable, "simple")
}

// noneView shows nothing.
type noneView struct{ out io.Writer }

func (v *noneView) Log() io.Writer { return v.out }
func (v *noneView) Stop() error    { return nil }
func (v *noneView) Kind() string   { return "none" }

// simpleView prints log lines, or redraws a block on a terminal.
type simpleView struct {
	tr   *Tracker
	opt  Options
	term bool
	kind string

	mu    sync.Mutex // guards out, drawn, last, err
	drawn int        // lines of the block on screen
	last  []string
	err   error

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func startSimple(tr *Tracker, opt Options, onTerm bool, kind string) *simpleView {
	v := &simpleView{tr: tr, opt: opt, term: onTerm, kind: kind, stop: make(chan struct{}), done: make(chan struct{})}
	go v.loop()
	return v
}

func (v *simpleView) Kind() string { return v.kind }

func (v *simpleView) loop() {
	defer close(v.done)
	tick := v.opt.Tick
	if tick == nil {
		period := v.opt.Interval
		if v.term {
			period = v.opt.Refresh
		}
		t := time.NewTicker(period)
		defer t.Stop()
		tick = t.C
	}
	if v.term {
		v.render() // the block appears at once
	}
	for {
		select {
		case <-v.stop:
			v.tr.finish()
			v.render()
			return
		case _, ok := <-tick:
			if !ok {
				<-v.stop
				v.tr.finish()
				v.render()
				return
			}
			v.render()
		}
	}
}

func (v *simpleView) render() {
	s := v.tr.Update()
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.term {
		v.write([]byte(Line(&s) + "\n"))
		return
	}
	v.last = Block(&s, v.opt.BarWidth)
	v.redraw(nil)
}

// redraw erases the block, writes pre (log lines) and draws the block
// again. v.mu held.
func (v *simpleView) redraw(pre []byte) {
	var b bytes.Buffer
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", v.drawn) // to the block's top, clear below
	}
	b.Write(pre)
	// A line wider than the window would wrap onto a second row, which
	// the next redraw does not move up over: it would stay behind as a
	// duplicate. Each line is cut to the window's width (less one column,
	// so the cursor never wraps either).
	width := 0
	if v.opt.Size != nil {
		if w, _, err := v.opt.Size(); err == nil && w > 1 {
			width = w - 1
		}
	}
	for _, l := range v.last {
		if width > 0 && lipgloss.Width(l) > width {
			l = lipgloss.NewStyle().MaxWidth(width).Render(l)
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	v.drawn = len(v.last)
	v.write(b.Bytes())
}

func (v *simpleView) write(p []byte) {
	if _, err := v.opt.Out.Write(p); err != nil && v.err == nil {
		v.err = err
	}
}

// Log returns a writer that puts log lines above the block.
func (v *simpleView) Log() io.Writer { return logFunc(v.logLine) }

func (v *simpleView) logLine(p []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.term {
		v.write(p)
		return
	}
	v.redraw(p)
}

func (v *simpleView) Stop() error {
	v.once.Do(func() { close(v.stop) })
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err
}

// logFunc is an io.Writer calling f with each write (a whole log line).
type logFunc func([]byte)

func (f logFunc) Write(p []byte) (int, error) {
	f(bytes.Clone(p))
	return len(p), nil
}
