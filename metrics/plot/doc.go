// Package plot renders metrics_plots.png, the 6×2 panel figure InferenceX
// uploads with every AgentX run (reference/inferencex-contract.md §3.5),
// natively with gonum.org/v1/plot: 14×24 in at 150 dpi (2100×3600 px).
//
// Server panels are built from the 1 s timeslices of the server metrics
// export (server.Export), request panels from one slice of RequestPoint
// structs — never from parallel lists (contract §4 item 5). Time zero is
// the earliest summary.endpoint_info.*.first_update_ns, else the earliest
// request start. Every panel is drawn even without data, labelled
// "no data", so the figure always has the same shape. Render reports
// anything it could not draw as a warning; callers must surface warnings
// and errors (contract §4 item 1), never swallow them.
package plot
