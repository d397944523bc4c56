package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
)

// version is set at release time with
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/agentperf
//
// Without it, a binary built by `go install …/cmd/agentperf@v1.2.3` takes
// its version from the module build info; a local build is "dev".
var version = ""

func init() {
	register(command{name: "version", summary: "print the version (also: agentperf --version)", run: runVersion})
}

// buildVersion returns the version of this binary: the ldflags value, else
// the main module's version from the build info, else "dev".
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// productVersion is the version written into the artifacts
// (aiperf_version): "agentperf v1.2.3".
func productVersion() string { return "agentperf " + buildVersion() }

const versionExamples = `  agentperf version
  agentperf --version`

// runVersion is `agentperf version`: the version, the VCS revision the
// build recorded, the Go version and the platform.
func runVersion(_ context.Context, args []string, io stdio) error {
	fs := newFlagSet("version", "version", versionExamples, io.out)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("version: unexpected argument %q (it takes none)", fs.Arg(0))
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if i := slices.IndexFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == "vcs.revision" }); i >= 0 {
			rev = " " + bi.Settings[i].Value
		}
	}
	fmt.Fprintf(io.out, "agentperf %s%s %s %s/%s\n", buildVersion(), rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
