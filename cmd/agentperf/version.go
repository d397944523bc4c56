package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set with -ldflags "-X main.version=v1.2.3" at release time.
var version = "dev"

func init() {
	register(command{name: "version", summary: "print the version", run: runVersion})
}

func runVersion(_ context.Context, args []string, io stdio) error {
	fs := newFlagSet("version", "version", "  agentperf version", io.err)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = " " + s.Value
			}
		}
	}
	fmt.Fprintf(io.out, "agentperf %s%s %s %s/%s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
