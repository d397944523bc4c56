package metrics

import (
	"cmp"
	"slices"
)

// Occupancy is the achieved concurrency of one phase's window as this
// client saw it: how many requests it had in flight, from the records'
// start and end times (request_start_ns, request_end_ns). Every record
// that is not a context overflow counts, whatever its phase and outcome,
// over the part of it inside the window: a warmup request still in
// flight after profiling started keeps the server busy in profiling.
// Context-overflow rejections are left out (their records are in the
// overflow export; the server turns them away at once).
type Occupancy struct {
	// Phase is "warmup" or "profiling"; StartNs and EndNs bound its
	// window.
	Phase          string
	StartNs, EndNs int64
	// MeanInFlight is the time-weighted mean of the requests in flight
	// over the window (their in-flight time inside it over its length);
	// IdleShare the fraction of the window with none in flight (0..1);
	// MaxInFlight the most at one instant; Requests the records
	// overlapping the window.
	MeanInFlight, IdleShare float64
	MaxInFlight, Requests   int
}

// Seconds is the window's length in seconds.
func (o *Occupancy) Seconds() float64 { return float64(o.EndNs-o.StartNs) / 1e9 }

// occupancy sweeps over the start and end events of the rows that
// overlap [t0, t1), clipped to it: exact, not sampled. A request that
// ends at the instant another starts is never counted twice.
func occupancy(rows *columns, phase string, t0, t1 int64) Occupancy {
	o := Occupancy{Phase: phase, StartNs: t0, EndNs: t1}
	if t1 <= t0 {
		return o
	}
	type event struct {
		at    int64
		delta int
	}
	var ev []event
	for i := range rows.len() {
		s, e := rows.times(i)
		e = max(e, s) // a record without a sane end is in flight for no time
		if e <= t0 || s >= t1 || e == s {
			continue
		}
		o.Requests++
		ev = append(ev, event{max(s, t0), +1}, event{min(e, t1), -1})
	}
	// Ends before starts at the same instant.
	slices.SortFunc(ev, func(a, b event) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	})
	var area, idle float64
	n, prev := 0, t0
	for _, x := range ev {
		if d := x.at - prev; d > 0 {
			area += float64(n) * float64(d)
			if n == 0 {
				idle += float64(d)
			}
			prev = x.at
		}
		n += x.delta
		o.MaxInFlight = max(o.MaxInFlight, n)
	}
	if d := t1 - prev; d > 0 {
		idle += float64(d) // every request has ended by then
	}
	span := float64(t1 - t0)
	o.MeanInFlight, o.IdleShare = area/span, idle/span
	return o
}

// occupancies are the achieved concurrency of the warmup window (from the
// first warmup request's start to profiling's; only when there were
// warmup records and the profiling start is known) and of the profiling
// window (RunInfo's, or from the profiling records' first start to their
// last end when it is not known).
func occupancies(rows *columns, info *RunInfo) []Occupancy {
	ps, pe := info.profilingWindow()
	var t0, t1 int64
	if !ps.IsZero() {
		t0 = ps.UnixNano()
	}
	if !pe.IsZero() {
		t1 = pe.UnixNano()
	}
	warm, first := false, true
	var wt0 int64
	for i := range rows.len() {
		s, e := rows.times(i)
		if rows.flags(i).warmup() {
			if !warm || s < wt0 {
				wt0 = s
			}
			warm = true
			continue
		}
		if ps.IsZero() && (first || s < t0) {
			t0 = s
		}
		if pe.IsZero() && (first || e > t1) {
			t1 = e
		}
		first = false
	}
	var out []Occupancy
	if warm && !info.ProfilingStart.IsZero() && info.ProfilingStart.UnixNano() > wt0 {
		out = append(out, occupancy(rows, "warmup", wt0, info.ProfilingStart.UnixNano()))
	}
	if t1 > t0 {
		out = append(out, occupancy(rows, "profiling", t0, t1))
	}
	return out
}

// occupancyMetadata is metadata.agentperf.achieved_concurrency: per
// phase, its window and figures.
func occupancyMetadata(occ []Occupancy) map[string]any {
	m := map[string]any{"method": OccupancyMethod}
	for i := range occ {
		o := &occ[i]
		m[o.Phase] = map[string]any{
			"window_start_ns": o.StartNs, "window_end_ns": o.EndNs, "window_s": o.Seconds(),
			"mean_requests_in_flight": o.MeanInFlight, "idle_share": o.IdleShare,
			"max_requests_in_flight": o.MaxInFlight, "requests": o.Requests,
		}
	}
	return m
}

// OccupancyMethod says how achieved_concurrency is computed.
const OccupancyMethod = "exact sweep over the records' request_start_ns/request_end_ns (context overflows left out), clipped to each phase's window; idle_share is the fraction of the window with no request of this client in flight"
