// Package profile finishes a replay run: after replay.Run returns, Finish
// judges the run (scenario.Judge), writes every artifact a run leaves in
// its folder (the server metrics export, metrics_plots.png, the
// aggregates with every warning in metadata.warnings, report.html) and
// returns the verdict and what makes the run fail. It is what the
// `agentperf profile` command does after its run, for a Go program that
// drives replay.Run itself; the command only maps flags to an Input and
// prints the Outcome.
//
// The aggregate JSON is written once. Everything a warning can come from
// is done before it: the server metrics export, reading the figure's
// input (the record stream, the server export) once for both the plot and
// report.html, rendering the plot. After a failed write during the run (a
// full disk) the aggregates go first, into the room the collector kept;
// the rest follows if it fits, and the warnings found then are in
// Outcome.LateWarnings only (docs/stopping-early.md).
//
// docs/artifacts.md lists every file and key written.
package profile
