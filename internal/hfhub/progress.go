package hfhub

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/agentperf/agentperf/internal/numfmt"
)

// Progress receives the progress of one file download at a time: Start,
// any number of Add, then Finish. A Client calls it from the goroutine
// that downloads.
type Progress interface {
	// Start begins a file: name is what to show, total its size in bytes
	// (-1 when unknown), done the bytes already present (a resumed
	// download).
	Start(name string, total, done int64)
	// Add reports n more bytes written. n is negative when bytes kept
	// from an earlier attempt had to be thrown away.
	Add(n int64)
	// Finish ends the file; err is nil when it was downloaded and verified.
	Finish(err error)
}

// ProgressWriter renders Progress to a writer: on a terminal a bar
// redrawn in place (bytes, percentage, rate, ETA), otherwise a log line at
// the start, every LogEvery, and at the end. The caller decides which, so
// that a library never guesses at its output.
type ProgressWriter struct {
	w        io.Writer
	terminal bool
	// LogEvery is the interval between log lines off a terminal
	// (default 10 s); Redraw the minimum interval between terminal redraws
	// (default 100 ms).
	LogEvery, Redraw time.Duration
	now              func() time.Time

	mu          sync.Mutex
	name        string
	total, done int64
	resumed     int64
	start, last time.Time
}

// NewProgressWriter returns a ProgressWriter on w; terminal selects the
// redrawn bar.
func NewProgressWriter(w io.Writer, terminal bool) *ProgressWriter {
	return &ProgressWriter{w: w, terminal: terminal, LogEvery: 10 * time.Second, Redraw: 100 * time.Millisecond, now: time.Now}
}

var _ Progress = (*ProgressWriter)(nil)

func (p *ProgressWriter) Start(name string, total, done int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name, p.total, p.done, p.resumed = name, total, done, done
	p.start = p.now()
	p.last = p.start
	if p.terminal {
		p.drawBar()
		return
	}
	size := "size unknown"
	if total >= 0 {
		size = numfmt.Bytes(total)
	}
	if done > 0 {
		fmt.Fprintf(p.w, "hub: %s: resuming at %s of %s\n", name, numfmt.Bytes(done), size)
	} else {
		fmt.Fprintf(p.w, "hub: %s: downloading %s\n", name, size)
	}
}

func (p *ProgressWriter) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	now := p.now()
	if p.terminal {
		if now.Sub(p.last) >= p.Redraw {
			p.last = now
			p.drawBar()
		}
		return
	}
	if now.Sub(p.last) >= p.LogEvery {
		p.last = now
		fmt.Fprintf(p.w, "hub: %s: %s\n", p.name, p.status(now))
	}
}

func (p *ProgressWriter) Finish(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.terminal {
		p.drawBar()
		fmt.Fprint(p.w, "\n")
	}
	if err != nil {
		fmt.Fprintf(p.w, "hub: %s: stopped at %s: %v\n", p.name, numfmt.Bytes(p.done), err)
		return
	}
	el := now.Sub(p.start)
	fmt.Fprintf(p.w, "hub: %s: %s in %s (%s/s)\n", p.name, numfmt.Bytes(p.done), el.Round(time.Millisecond), numfmt.Bytes(rate(p.done-p.resumed, el)))
}

// status is "12.0 MiB / 40.0 MiB (30%), 5.1 MiB/s, ETA 6s".
func (p *ProgressWriter) status(now time.Time) string {
	el := now.Sub(p.start)
	r := rate(p.done-p.resumed, el)
	if p.total < 0 {
		return fmt.Sprintf("%s, %s/s", numfmt.Bytes(p.done), numfmt.Bytes(r))
	}
	eta := "?"
	if r > 0 && p.total >= p.done {
		eta = (time.Duration(float64(p.total-p.done) / float64(r) * float64(time.Second))).Round(time.Second).String()
	}
	return fmt.Sprintf("%s / %s (%d%%), %s/s, ETA %s", numfmt.Bytes(p.done), numfmt.Bytes(p.total), percent(p.done, p.total), numfmt.Bytes(r), eta)
}

func (p *ProgressWriter) drawBar() {
	const width = 24
	filled := 0
	if p.total > 0 {
		filled = int(min(p.done, p.total) * width / p.total)
	}
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if i < filled {
			bar[i] = '#'
		}
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s [%s] %s", p.name, bar, p.status(p.now()))
}

func rate(n int64, el time.Duration) int64 {
	if el <= 0 {
		return 0
	}
	return int64(float64(n) / el.Seconds())
}

func percent(done, total int64) int64 {
	if total <= 0 {
		return 100
	}
	return min(done*100/total, 100)
}
