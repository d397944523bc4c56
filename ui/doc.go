// Package ui owns what a person watching a run sees: the live state of the
// run and the terminal views that show it.
//
// The live state is a Snapshot: the phase; warmup progress counting every
// outcome, with an ETA from the observed rate; profiling time left;
// requests ok, failed, overflowed, cancelled and in flight; request and
// token rates and TTFT/ITL percentiles over a recent window; the server's
// side (running and waiting requests, GPU KV usage, prefix-cache hit rate
// over the window, preemptions); and a one-line diagnosis when the picture
// is clear (Diagnose). A Tracker builds snapshots from a Source, the one
// narrow interface an engine implements: it returns a Sample of raw
// counters, and everything derived (ETA, time left, diagnosis, chart
// history) is computed here, once, for every view.
//
// The views (Type, aiperf's --ui-type names):
//   - dashboard: full screen (bubbletea, lipgloss) with small live charts of
//     TTFT, throughput, KV usage and hit rate, and a log pane. It takes no
//     keyboard input, so Ctrl-C stays the process's SIGINT. It falls back to
//     simple on a dumb terminal, when the output is not a terminal, and
//     draws the simple block in a window smaller than MinWidth×MinHeight.
//   - simple: a redrawn block with progress bars on a terminal; one log line
//     per interval elsewhere (CI logs, files).
//   - none: nothing live.
//
// Log lines written while a view runs go through View.Log, so they never
// tear the display; the dashboard prints them again when it stops.
package ui
