// Package capacity answers "how many concurrent sessions does this
// deployment hold within its SLO?" and draws the curve around it.
//
// Search is the algorithm, over a probe function that runs one
// measurement at a given concurrency and says whether it met the
// objective: an exponential probe from the low end of the range (lo, 2lo,
// 4lo, … capped at hi) until a probe fails, then bisection on integer
// concurrency between the highest passing and the lowest failing probe
// until they are within the resolution. It returns the highest
// concurrency that met every objective, the probes next to it on either
// side, and every probe in order.
//
// A probe the client could not drive (its own send lateness beyond a
// bound, or its CPU saturated: ClientCheck) is invalid, not infeasible:
// it is retried, and when it stays client-bound it bounds what can be
// measured, which the result says (Result.ClientBoundAt), but never counts
// as a server failure.
//
// For a range lo..hi, a capacity K (lo ≤ K < hi) and an absolute
// resolution r, the number of probes is PredictProbes(lo, hi, r, K):
// m+2 for the exponential phase, m = ⌊log2(K/lo)⌋ (the last one fails),
// then ⌈log2(w/r)⌉ bisections of the bracket of width
// w = min(lo·2^(m+1), hi) − lo·2^m.
//
// RunSearch makes the probes real runs judged with package slo; Sweep
// runs a list of points in order and resumes; WriteSweepReport and
// WriteSearchReport write what the commands publish (docs/capacity.md).
package capacity
