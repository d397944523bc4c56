// Package htmlreport writes report.html, the interactive report of an
// artifact folder: one self-contained file that needs no network. It holds
// the summary (run facts, validity under a scenario, warnings, the
// per-request statistics and run-level figures of
// profile_export_aiperf.json) and the same 6×2 server and per-request
// panels as metrics_plots.png (the series come from metrics/plot's
// Figure), drawn with uPlot: drag to zoom every chart to a time range,
// hover to read values, click a legend entry to toggle a series. The
// warmup is shaded and the start of profiling marked on every chart.
//
// The charting library is vendored: npm/package.json and its lock file
// pin the npm package, npm/update.sh reinstalls it and copies the
// minified files into assets/, which are embedded with go:embed. The
// page's Content-Security-Policy allows no network access at all.
package htmlreport
