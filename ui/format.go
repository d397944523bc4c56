package ui

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// clock formats a duration as [h:]mm:ss.
func clock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%02d:%02d", m, s)
}

// ms formats milliseconds, "-" when unknown.
func ms(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v >= 10_000:
		return fmt.Sprintf("%.1f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.1f ms", v)
}

// count formats a possibly unknown count.
func count(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

// rate formats a per-second figure compactly (12.3, 4.5k, 1.2M).
func rate(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// bar renders a progress bar of frac (0..1) in width cells.
func bar(frac float64, width int) string {
	if math.IsNaN(frac) {
		frac = 0
	}
	frac = math.Max(0, math.Min(1, frac))
	full := int(math.Round(frac * float64(width)))
	return "[" + strings.Repeat("█", full) + strings.Repeat("░", width-full) + "]"
}

// phaseText is the phase with its progress: "warmup 12/64, ETA 03:10",
// "profiling 01:30 / 05:00, 03:30 left".
func phaseText(s *Snapshot) string {
	switch {
	case !s.ProfilingStart.IsZero():
		name := "profiling"
		switch {
		case s.Phase == PhaseDone && s.Interrupted:
			name = "interrupted; profiling"
		case s.Phase == PhaseDone:
			name = "done; profiling"
		case s.Phase == PhaseDraining && s.Interrupted:
			name = "stopping (interrupted); profiling"
		case s.Phase == PhaseDraining:
			name = "grace period; profiling"
		}
		if s.ProfilingDuration > 0 {
			left := clock(s.ProfilingLeft) + " left"
			if s.ProfilingLeft < 0 {
				left = "stopped early"
			}
			return fmt.Sprintf("%s %s / %s, %s", name, clock(min(s.ProfilingElapsed, s.ProfilingDuration)), clock(s.ProfilingDuration), left)
		}
		return fmt.Sprintf("%s %s", name, clock(s.ProfilingElapsed))
	case s.WarmupTotal > 0:
		name := "warmup"
		switch {
		case s.Phase == PhaseDone:
			name = "ended in warmup"
		case s.Phase == PhaseDraining:
			name = "stopping in warmup"
		}
		return fmt.Sprintf("%s %d/%d, %s", name, s.WarmupDone, s.WarmupTotal, etaText(s))
	}
	return fmt.Sprintf("%s %s", s.Phase, clock(s.Elapsed))
}

// etaText is the warmup's estimated time left.
func etaText(s *Snapshot) string {
	if s.WarmupTotal > 0 && s.WarmupDone >= s.WarmupTotal {
		return "done"
	}
	if s.WarmupETA < 0 {
		if s.WarmupDone == 0 {
			return "ETA after the first warmup request finishes"
		}
		return "ETA unknown"
	}
	return "ETA " + clock(s.WarmupETA)
}

// countsText is "12 ok, 0 errors, 1 overflows, 0 cancelled, 64 in flight"
// for the current phase.
func countsText(s *Snapshot) string {
	c := s.Counts()
	return fmt.Sprintf("%d ok, %d errors, %d overflows, %d cancelled, %d in flight", c.OK, c.Errors, c.Overflows, c.Cancelled, s.InFlight)
}

// windowText says what the client-side figures cover: "profiling, last
// 10 s". Before profiling they cover warmup requests, after its start
// profiling requests only.
func windowText(s *Snapshot) string {
	c := &s.Client
	w := "last " + c.Window.Round(time.Second).String()
	if c.Window < time.Second {
		w = "last " + c.Window.Round(100*time.Millisecond).String()
	}
	if s.Phase == PhaseDone {
		w += " of the run"
	}
	if c.Phase == "" {
		return w
	}
	return string(c.Phase) + ", " + w
}

// cacheText is the server's prefix-cache hit rate and the theoretical one,
// each with what it covers.
func cacheText(s *Snapshot) string {
	sv := &s.Server
	hit := "-"
	if sv.Valid {
		hit = pct(sv.HitRate)
		if sv.HitWindow > 0 {
			hit += " (server, last " + sv.HitWindow.Round(time.Second).String() + ")"
		}
	}
	out := "GPU prefix-cache hit " + hit
	if th := s.Client.TheoreticalHitRate; !math.IsNaN(th) {
		out += ", theoretical " + pct(th) + " (" + windowText(s) + " requests)"
	}
	return out
}

// latencyText is the TTFT/ITL percentiles, or why there are none.
func latencyText(s *Snapshot) string {
	if !s.Streaming {
		return "TTFT/ITL n/a (not streaming)"
	}
	c := &s.Client
	return fmt.Sprintf("TTFT p50 %s p99 %s, ITL p50 %s p99 %s", ms(c.TTFTP50), ms(c.TTFTP99), ms(c.ITLP50), ms(c.ITLP99))
}

// serverText is the server's side in one line.
func serverText(s *Snapshot) string {
	sv := &s.Server
	if !sv.Valid {
		switch {
		case sv.Scrapes > 0 && sv.ScrapeFailures == sv.Scrapes:
			return "/metrics: every scrape failed"
		case sv.EngineNote != "" && sv.Scrapes > sv.ScrapeFailures:
			return "/metrics: " + sv.EngineNote
		}
		return "/metrics: no data yet"
	}
	pre := ""
	if !math.IsNaN(sv.PreemptionsTotal) {
		pre = fmt.Sprintf(", %s preemptions in all", count(sv.PreemptionsTotal))
	}
	out := fmt.Sprintf("%s running, %s waiting, KV %s%s now", count(sv.Running), count(sv.Waiting), pct(sv.KVUsage), pre)
	if sv.Engine != "" {
		out = sv.Engine + ": " + out
		if sv.EngineNote != "" {
			out += " (" + sv.EngineNote + ")"
		}
	}
	return out
}

// Line is the one-line form of a snapshot, as the log shows it.
func Line(s *Snapshot) string {
	l := fmt.Sprintf("[%s] %s | %s: %s req/s, %s output tok/s, %s | server %s | %s", phaseText(s), countsText(s),
		windowText(s), rate(s.Client.RequestsPerSec), rate(s.Client.OutputTokensPerSec), latencyText(s), serverText(s), cacheText(s))
	if s.Diagnosis != "" {
		l += " | " + s.Diagnosis
	}
	return l
}

// Block is the multi-line form of a snapshot with progress bars, as the
// simple view shows it on a terminal; width is the bars' width in cells.
func Block(s *Snapshot, width int) []string {
	var out []string
	if s.WarmupTotal > 0 {
		l := fmt.Sprintf("warmup    %s %d/%d", bar(float64(s.WarmupDone)/float64(s.WarmupTotal), width), s.WarmupDone, s.WarmupTotal)
		if s.ProfilingStart.IsZero() {
			l += ", " + etaText(s)
		} else {
			l += ", took " + clock(s.WarmupTook)
		}
		out = append(out, l)
	}
	if !s.ProfilingStart.IsZero() {
		if s.ProfilingDuration > 0 {
			out = append(out, fmt.Sprintf("profiling %s %s / %s, %s left", bar(float64(s.ProfilingElapsed)/float64(s.ProfilingDuration), width),
				clock(min(s.ProfilingElapsed, s.ProfilingDuration)), clock(s.ProfilingDuration), clock(s.ProfilingLeft)))
		} else {
			out = append(out, fmt.Sprintf("profiling %s elapsed", clock(s.ProfilingElapsed)))
		}
	}
	switch {
	case s.Phase == PhaseDraining && s.Killed:
		out = append(out, "stopping  interrupted twice: the requests in flight are cancelled, then every artifact is written")
	case s.Phase == PhaseDraining && s.Interrupted:
		out = append(out, "stopping  interrupted: no new requests; in-flight requests finish, then every artifact is written")
	case s.Phase == PhaseDraining:
		out = append(out, "stopping  profiling is over: in-flight requests get the grace period, then every artifact is written")
	}
	out = append(out,
		fmt.Sprintf("requests  %s %s", phaseLabel(s), countsText(s)),
		fmt.Sprintf("rate      %s req/s, %s output tok/s (%s)", rate(s.Client.RequestsPerSec), rate(s.Client.OutputTokensPerSec), windowText(s)),
		"latency   "+latencyText(s)+" ("+windowText(s)+")",
		"server    "+serverText(s),
		"cache     "+cacheText(s))
	if s.GPU.Valid {
		out = append(out, fmt.Sprintf("gpu       %d GPUs, power %s W now, %s output tok/J (output tok/s of the window ÷ power now)", s.GPU.GPUs, count(s.GPU.PowerW), rate(s.TokensPerJoule())))
	}
	if s.Diagnosis != "" {
		out = append(out, "diagnosis "+s.Diagnosis)
	}
	return out
}

// phaseLabel names the phase whose counts are shown.
func phaseLabel(s *Snapshot) string {
	if s.Phase == PhaseStarting || s.Phase == PhaseWarmup || s.ProfilingStart.IsZero() {
		return "(warmup)"
	}
	return "(profiling)"
}
