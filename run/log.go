package run

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// runLog writes a run's log lines to the caller's writer (the terminal,
// or the live view while it runs) and to logs/aiperf.log. Lines logged
// before the artifact folder exists are kept and written first.
type runLog struct {
	mu      sync.Mutex
	w       io.Writer
	file    *os.File
	pending []string
	// termErr is the first failed write to the terminal side: a closed
	// pipe (`| tee` whose tee died) or terminal. The run goes on; the
	// file says so once.
	termErr error
}

func newRunLog(w io.Writer) *runLog {
	if w == nil {
		w = io.Discard
	}
	return &runLog{w: w}
}

// openFile creates dir/logs/aiperf.log (and dir) and writes the lines
// logged so far into it.
func (l *runLog) openFile(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return fmt.Errorf("create --output-artifact-dir %s: %w", dir, err)
	}
	f, err := os.Create(filepath.Join(dir, "logs", "aiperf.log"))
	if err != nil {
		return fmt.Errorf("create log file in %s: %w (is the directory writable?)", dir, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.file = f
	for _, line := range l.pending {
		f.WriteString(line)
	}
	l.pending = nil
	return nil
}

func (l *runLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
}

// toFile writes line to the file, or keeps it until the file is open.
// l.mu held.
func (l *runLog) toFile(line string) {
	if l.file != nil {
		l.file.WriteString(line)
		return
	}
	l.pending = append(l.pending, line)
}

// setOutput redirects the terminal side of the log (the file is kept).
func (l *runLog) setOutput(w io.Writer) {
	l.mu.Lock()
	l.w = w
	l.mu.Unlock()
}

// raw is the terminal side, for lines that are not log lines (the
// corpus loading lines).
func (l *runLog) raw() io.Writer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w
}

// FileOnly writes a line to logs/aiperf.log only, for a message the
// terminal gets in another form.
func (l *runLog) FileOnly(format string, args ...any) {
	line := logLine(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.toFile(line)
}

// Printf writes one timestamped line to both sides.
func (l *runLog) Printf(format string, args ...any) {
	line := logLine(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := io.WriteString(l.w, line); err != nil && l.termErr == nil {
		l.termErr = err
		l.toFile(logLine("note: terminal output failed (%v): the run goes on; this log and the artifacts are complete", err))
	}
	l.toFile(line)
}

// logLine is one timestamped log line.
func logLine(format string, args ...any) string {
	line := time.Now().Format("15:04:05.000") + " " + fmt.Sprintf(format, args...)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	return line
}
