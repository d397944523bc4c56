package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/agentperf/agentperf/internal/cliflags"
	"github.com/agentperf/agentperf/internal/inputerr"
	"github.com/agentperf/agentperf/internal/suggest"
	"github.com/agentperf/agentperf/run"
	"github.com/spf13/pflag"
)

// Exit codes; see the package comment.
const (
	exitOK          = 0
	exitRunFailed   = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// usageError marks an error caused by the command line or the input
// (exit code 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error (exit code 2).
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// asUsage wraps err as a usage error unless it is nil.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}

// errRunFailed marks a run that completed but failed or is not valid
// (exit code 1); the message has already been printed.
var errRunFailed = errors.New("run failed")

// errRunInterrupted is returned by a command whose result is a run that a
// signal interrupted although the command itself was not (merge of the
// shards of a run stopped by scancel): exit 130, the run's own status.
var errRunInterrupted = errors.New("the run was interrupted")

// stdio bundles the output streams of a subcommand.
type stdio struct {
	out, err io.Writer
	// outcome, when set, receives the run's Outcome (runSpec; --output
	// json reads it).
	outcome **run.Outcome
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, io stdio) error
}

// commands is the table of subcommands; filled by each subcommand file's
// init (pure table registration, no side effects).
var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// runMain executes agentperf with args (without the program name) and returns
// the exit code. It is main without the process: tests call it directly.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	io := stdio{out: stdout, err: stderr}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printTopUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-v" {
		args = append([]string{"version"}, args[1:]...)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "agentperf: unknown command %q%s\n\n", args[0], suggestCommand(args[0]))
		printTopUsage(stderr)
		return exitUsage
	}
	err := c.run(ctx, args[1:], io)
	return exitCode(ctx, err, stderr)
}

// exitCode maps an error to the documented exit code, printing it (with
// the library's field names as flag names).
func exitCode(ctx context.Context, err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, pflag.ErrHelp):
		return exitOK
	case errors.Is(err, errRunFailed):
		return exitRunFailed
	case errors.Is(err, errRunInterrupted):
		printPrefixed(stderr, err.Error())
		return exitInterrupted
	}
	// The library's InputError (run's, compare's, inferencex's: one type)
	// is its word for a usage error: the input, not the run, is at fault.
	var ue *usageError
	if errors.As(err, &ue) || inputerr.Is(err) {
		printPrefixed(stderr, flagNames(err.Error()))
		return exitUsage
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "agentperf: interrupted")
		return exitInterrupted
	}
	printPrefixed(stderr, flagNames(err.Error()))
	return exitRunFailed
}

// printPrefixed prints msg with the "agentperf: " prefix on each of its
// lines (an errors.Join error has one per error), so that every error
// line says where it comes from.
func printPrefixed(w io.Writer, msg string) {
	for _, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		fmt.Fprintf(w, "agentperf: %s\n", line)
	}
}

func printTopUsage(w io.Writer) {
	fmt.Fprintln(w, "agentperf replays recorded agentic-coding sessions against an OpenAI-compatible server.")
	fmt.Fprintln(w, "\nUsage:\n  agentperf <command> [flags]\n\nCommands:")
	for _, n := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'agentperf <command> --help' for the flags and examples of a command; 'agentperf --version' for the version.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 run failed or not valid, 2 usage or input error, 130 interrupted.")
	fmt.Fprintln(w, "\nExamples:\n  agentperf profile --url sim:// --public-dataset synthetic --model demo --concurrency 4 --benchmark-duration 20 --streaming")
	fmt.Fprintln(w, "  agentperf profile --help")
}

// newFlagSet returns a flag set for a subcommand whose usage text prints
// the synopsis, the flags and the examples to the flag set's output: help
// that was asked for (--help) goes to w, the command's stdout, so that it
// can be piped; usageTo prints it elsewhere (stderr, on a usage error).
func newFlagSet(name, synopsis, examples string, w io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(w)
	fs.SortFlags = false
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage:\n  agentperf %s\n\n", synopsis)
		cliflags.WriteUsages(w, fs, helpWidth)
		if examples != "" {
			fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(examples, "\n"))
		}
	}
	return fs
}

// usageTo prints the usage text of fs to w (stderr, beside a usage
// error) instead of its output.
func usageTo(fs *pflag.FlagSet, w io.Writer) {
	old := fs.Output()
	fs.SetOutput(w)
	fs.Usage()
	fs.SetOutput(old)
}

// parseFlags parses args, turning flag errors into usage errors.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(cliflags.JoinNargs(fs, args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return asUsage(cliflags.SuggestFlag(fs, err, "agentperf"))
	}
	// --config: the file's values under the command line's.
	if path := cliflags.ConfigFile(fs); path != "" {
		if err := cliflags.ApplyConfigFile(fs, path); err != nil {
			return asUsage(err)
		}
	}
	return nil
}

// helpWidth is the width the flag descriptions are wrapped to.
const helpWidth = 110

// suggestCommand returns " (did you mean X?)" for a near miss.
func suggestCommand(typed string) string {
	return suggest.DidYouMean(typed, slices.Sorted(maps.Keys(commands)))
}
