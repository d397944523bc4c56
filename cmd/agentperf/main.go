// Command agentperf replays recorded agentic-coding sessions against an
// OpenAI-compatible server and measures what they do to it.
//
// Exit codes (one table for scripts):
//
//	0    success (also --help); under --scenario also a completed run whose
//	     only invalidity reasons are unsafe_override and the overflow rate,
//	     as the pinned aiperf (run.Outcome.ExitCode; --fail-on-invalid
//	     makes them exit 1)
//	1    the run failed or is not a valid submission (artifacts are written)
//	2    usage or input error (bad flag, bad corpus, unsupported option)
//	130  interrupted by a signal (artifacts are written)
//	134  a crash: the Go runtime's fatal error, an unrecovered panic or
//	     SIGQUIT; the stacks go to stderr and the process ends by SIGABRT
//	     (the shell's 128+6), never the 2 of a usage error
//	     (docs/stopping-early.md, "A crash")
//
// Signals (SIGINT, SIGTERM, SIGHUP): the first stops a run gracefully (no
// new requests; those in flight get the grace period, at most 5 s after a
// SIGTERM or SIGHUP, whose kill may follow); the second cancels the
// requests in flight at once, and every artifact is still written from
// what was recorded, marked cancelled and "interrupted twice"; only a third
// exits at once and may leave partial (.partial) files. A command that has
// nothing to cut short exits at the second.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentperf/agentperf/internal/termio"
	"github.com/agentperf/agentperf/replay"
)

// termGrace bounds the grace of the requests in flight after a SIGTERM
// (docs/stopping-early.md, "The SIGTERM budget"): with the artifacts
// written in a few seconds after it, a run stops inside Slurm's default
// KillWait of 30 s, and inside 10 s.
const termGrace = 5 * time.Second

// stopMessage is what the first signal s prints: a run (profile, sweep,
// search) writes its artifacts after it; the other commands (the
// simulator, a download) have none to write, and say only that they stop.
// term is a scheduler's kind of stop (SIGTERM, SIGHUP).
func stopMessage(s os.Signal, term bool, args []string) string {
	run := false
	if len(args) > 0 {
		switch args[0] {
		case "profile", "sweep", "search":
			run = true
		}
	}
	switch {
	case run && term:
		return fmt.Sprintf("\nagentperf: %v: stopping gracefully; requests in flight get at most %s, then every artifact is written (a second signal cancels them at once)\n", s, termGrace)
	case run:
		return fmt.Sprintf("\nagentperf: %v: stopping gracefully (a second signal cancels the requests in flight at once; the run still writes its artifacts)\n", s)
	default:
		return fmt.Sprintf("\nagentperf: %v: stopping gracefully (a second signal stops at once)\n", s)
	}
}

// processStart is when the process started (package initialisation), for
// the start-up figure in the log.
var processStart = time.Now()

func main() {
	crashBySIGABRT()
	ctx, cancel := context.WithCancelCause(context.Background())
	ks := &killSwitch{ch: make(chan struct{})}
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		ks.signals.Add(1)
		if name, ok := terminating[s]; ok {
			// A scheduler's SIGTERM: its SIGKILL follows (Slurm's KillWait,
			// 30 s by default), so the requests in flight get a bounded grace.
			// SIGHUP (a dropped ssh session, a closed terminal) is the same
			// kind of stop: nobody is left to press Ctrl-C a second time.
			fmt.Fprint(os.Stderr, stopMessage(s, true, os.Args[1:]))
			cancel(&replay.Terminated{Signal: name, Grace: termGrace})
		} else {
			fmt.Fprint(os.Stderr, stopMessage(s, false, os.Args[1:]))
			cancel(nil)
		}
		<-sigs
		ks.signals.Add(1)
		if !ks.claimed.Load() {
			fmt.Fprintln(os.Stderr, "agentperf: second signal: exiting at once")
			os.Exit(exitInterrupted)
		}
		fmt.Fprintln(os.Stderr, "agentperf: second signal: cancelling the requests in flight now; every artifact is still written (a third signal exits at once and may leave .partial files)")
		close(ks.ch)
		<-sigs
		fmt.Fprintln(os.Stderr, "agentperf: third signal: exiting at once; the artifacts may be incomplete (.partial files)")
		os.Exit(exitInterrupted)
	}()
	// A closed stdout or stderr (the reader of a pipe died: `| tee` under
	// a scheduler's SIGTERM) must not end the run. Without a Notify for
	// SIGPIPE, Go exits at a failed write to fd 1 or 2; with one, the
	// write returns EPIPE, and termio.Writer turns that output off.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	go func() {
		for range pipes {
		}
	}()
	code := runMain(withKillSwitch(ctx, ks), os.Args[1:], termio.Output(os.Stdout), termio.Output(os.Stderr))
	cancel(nil)
	os.Exit(code)
}

// terminating names the signals that stop a run as a scheduler's SIGTERM
// does (a bounded grace, then every artifact): SIGTERM and SIGHUP.
var terminating = map[os.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}

// crashBySIGABRT makes every crash of the process (a fatal error of the Go
// runtime such as running out of memory, an unrecovered panic, SIGQUIT)
// end by SIGABRT after the stacks are printed, so that its status (134 in
// a shell) is told apart from the exit 2 of a usage error, which is also
// the Go runtime's own code for a crash. A core file is not wanted from a
// load generator that may hold gigabytes (its soft core limit is set to
// 0). A GOTRACEBACK the user set is left as it is, core limit included.
func crashBySIGABRT() {
	if _, set := os.LookupEnv("GOTRACEBACK"); set {
		return
	}
	noCoreFile()
	debug.SetTraceback("crash")
}

// killSwitch carries the second signal to a command that can cut its work
// short and still write its output (profile). A command claims it; when
// none did, the second signal exits at once.
type killSwitch struct {
	ch      chan struct{}
	claimed atomic.Bool
	// signals counts the signals received so far.
	signals atomic.Int32
}

type killSwitchKey struct{}

// withKillSwitch returns ctx carrying ks.
func withKillSwitch(ctx context.Context, ks *killSwitch) context.Context {
	return context.WithValue(ctx, killSwitchKey{}, ks)
}

// claimKillSwitch claims the kill switch of ctx and returns the channel the
// second signal closes; nil when ctx carries none (tests calling run).
func claimKillSwitch(ctx context.Context) <-chan struct{} {
	ks, _ := ctx.Value(killSwitchKey{}).(*killSwitch)
	if ks == nil {
		return nil
	}
	ks.claimed.Store(true)
	return ks.ch
}

// signalCount returns a function reporting how many signals the process
// has received (run.Input.Signals); nil when ctx carries no kill
// switch.
func signalCount(ctx context.Context) func() int {
	ks, _ := ctx.Value(killSwitchKey{}).(*killSwitch)
	if ks == nil {
		return nil
	}
	return func() int { return int(ks.signals.Load()) }
}
