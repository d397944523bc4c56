// Package plot renders metrics_plots.png, the 6×2 panel figure InferenceX
// uploads with every AgentX run (in the layout of InferenceX's own
// plotter; docs/artifacts.md), natively with gonum.org/v1/plot: 14×24 in at
// 150 dpi (2100×3600 px).
//
// Server panels are built from the 1 s timeslices of the server metrics
// export (server.Export), request panels from one slice of RequestPoint
// structs — never from parallel lists, which InferenceX's plotter filtered
// differently so that one record without a start time broke a panel
// and the error was hidden. Time zero is
// the earliest summary.endpoint_info.*.first_update_ns, else the earliest
// request start. Every panel is drawn even without data, labelled
// "no data", so the figure always has the same shape. Render reports
// anything it could not draw as a warning; callers must surface warnings
// and errors, never swallow them (InferenceX once went days without a plot
// in any run because its plotter's failure was ignored).
//
// Reading the figure:
//   - a dashed vertical line marks where profiling starts (the aggregate
//     JSON's profiling_start_ns, else the first profiling request);
//   - percentage axes (KV usage, hit rate) end at 100;
//   - each panel's legend is drawn in a strip under it, never over the data;
//   - per-request rolling means are computed and drawn per phase, so no
//     line joins the end of warmup to the start of profiling;
//   - a partial timeslice (shorter than 95 % of the usual slice length, as
//     the last one of a run often is) has its rate weighted by its length,
//     so a burst counted over 0.03 s is not drawn as a spike; such slices
//     are ringed;
//   - the decode series of the throughput panel is scaled up by a round
//     factor named in its legend when it is under a fifth of the total.
package plot
