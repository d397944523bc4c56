// Package timing is the AGENTIC_REPLAY scheduler: it decides which turn of
// which trace each lane sends next, and when. It does no I/O, never sleeps
// and never reads the wall clock: every method that needs the time takes it
// as an argument, so a test drives it with a fake clock and gets exact
// schedules. The engine (package replay) calls it from one goroutine per
// lane; a Scheduler is safe for concurrent use.
//
// The semantics are aiperf's legacy agentic replay as InferenceX ran it at
// v0.2/v0.3 (reference/aiperf-agentic-spec.md §3.2, §1.9 "legacy",
// §3.4–§3.6; DESIGN.md "Semantics"). Rule by rule:
//
// Delays (§1.9 legacy, FromTrace). The recorded gap before turn k is its
// think_time when present (not NaN), else the start-time difference
// t_k − t_{k−1}; turn 0 has none. Each gap is clamped at 0 and at the
// inter-turn delay cap (60 s in the scenario; 0 disables the cap). The gap
// is counted from the end of the previous response (end-to-start). Only
// parent requests are turns: subagent entries are skipped (DESIGN.md,
// "Subagents"); the caller counts them.
//
// Usable traces (§3.2). A trace with n ≤ 1 turns cannot be split into a
// warmup turn and a profiling turn and is skipped everywhere (trajectory
// selection and recycling). New fails when no trace is usable.
//
// Lanes and trajectories (§3.2 "Trajectory selection"). There are
// Config.Lanes lanes. Lane i plays usable trace i in corpus order; when lanes
// outnumber usable traces the pool is cycled (wrap-fill: lane i takes usable
// trace i mod U). Wrap-filled lanes send byte-identical traffic unless the
// engine adds a cache-bust marker (§4.4).
//
// Start turn k_i (§3.2 "Start index"). With n the number of turns:
// n == 2 ⇒ k_i = 0; otherwise k_min = min(int(MinRatio·n), n−2),
// k_max = min(int(MaxRatio·n), n−2), k_min = k_max when k_min > k_max, and
// k_i is uniform in [k_min, k_max]. The draw uses a generator seeded with
// the first 8 bytes (big-endian) of SHA-256("<seed>:<trace_id>:<lane>")
// (the later aiperf keying, applied to every lane), fed to math/rand/v2's
// PCG, and mapped to the range with Lemire's unbiased multiply-and-reject.
// The same seed, corpus and lane count therefore give the same k_i on every
// run and platform. Byte parity with aiperf's numpy draws is NOT a goal:
// the structure (seed string, bounds, edge rules) is aiperf's, the numbers
// are not.
//
// Warmup (§3.2 "WARMUP phase", Warmup). Every lane sends turn k_i at once
// as a new session (the engine mints a correlation id and a cache-bust
// marker and builds the full history up to k_i). The engine waits for all
// of them (the barrier) and aborts the run on a failed warmup request.
//
// Profiling (§3.2 "PROFILING phase", StartProfiling and Next). Right after
// the barrier every lane sends turn k_i+1 at once, in the same session. After
// each profiling response that finished at time t, the lane's next turn j is
// due at t + Delays[j]. A failed request (not an overflow) does not end the
// session: the next turn follows as usual, as aiperf does.
//
// Recycling (§3.2, §3.4). When a lane finishes the last turn of its trace,
// or a response is a context overflow (§3.4: every later turn would be even
// larger), the trace goes to the tail of a FIFO queue and the lane takes a
// trace from the head and starts it at turn 0 at once, as a new session
// (new Session number, NewSession set, RecyclePass incremented for that
// trace id). The queue starts with the usable traces no lane was given, in
// corpus order. The lane prefers a trace not being played on any other lane:
// it scans at most Config.RecycleScan entries from the head and takes the
// first one that is not live; when all scanned entries are live it takes
// the head anyway. (With the queue seeded as above, a queued trace can be
// live elsewhere only when lanes outnumber usable traces; then the only
// candidate is usually the trace just finished, and the fallback takes it.)
//
// Recycle pass (§4.1). RecyclePass counts the sessions started for a trace
// id over the whole run, warmup included, starting at 0; it is never reset,
// so two sessions of one trace never get the same cache-bust marker.
//
// Duration (§3.5). The profiling clock starts at StartProfiling. No send is
// ever scheduled at or after Deadline = start + Config.Duration: a lane
// whose next send would be due then is done (Next returns false), and no
// new session starts. Requests in flight at the deadline are the engine's
// business (grace period, cancellation). Duration 0 means no deadline; the
// caller stops the run by other means.
package timing
