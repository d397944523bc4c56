// Package run runs a whole benchmark: a Spec holds a run's resolved
// settings (corpus, tokenizer, server or in-process simulator, the
// engine's replay.Config with its AgentX generation, artifact folder,
// server metrics, live view), and Run carries it out: it loads the corpus
// and the prompt synthesizer (Load, shareable between runs through
// Spec.Loaded), starts the simulator for a sim:// URL, replays with
// replay.Run while scraping /metrics and feeding the live view, then
// finishes the run. The `agentperf profile` command only maps its flags
// and environment to a Spec, calls Run and maps the Outcome to an exit
// status.
//
// Finishing (Finish, also for a program that drives replay.Run itself)
// judges the run (scenario.Judge), writes every artifact a run leaves in
// its folder (the server metrics export, metrics_plots.png, the
// aggregates with every warning in metadata.warnings, report.html) and
// returns the verdict and what makes the run fail.
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
package run
