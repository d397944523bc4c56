// Package selfprofile profiles agentperf itself: a CPU profile, a heap
// profile at the end, and net/http/pprof on a private mux bound to a
// loopback address. Its errors name the CLI's flags (--cpuprofile,
// --memprofile, --pprof-addr): it is the CLI's helper.
package selfprofile

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	rpprof "runtime/pprof"
)

// Options say what to profile ("" = not that).
type Options struct {
	// CPUProfile is the file of the CPU profile (--cpuprofile).
	CPUProfile string
	// MemProfile is the file of the heap profile written at the end
	// (--memprofile).
	MemProfile string
	// PprofAddr is the loopback host:port of net/http/pprof (--pprof-addr).
	PprofAddr string
	// Log receives the warnings of the heap profile.
	Log io.Writer
}

// Start starts what o asks for and returns the function that stops it
// all, in the reverse order: the heap profile is written, then the pprof
// server closed, then the CPU profile stopped.
func Start(o Options) (func(), error) {
	p, logw := o, o.Log
	if logw == nil {
		logw = io.Discard
	}
	var stops []func()
	if p.CPUProfile != "" {
		f, err := os.Create(p.CPUProfile)
		if err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := rpprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		stops = append(stops, func() { rpprof.StopCPUProfile(); f.Close() })
	}
	if p.PprofAddr != "" {
		host, _, err := net.SplitHostPort(p.PprofAddr)
		if err != nil || (host != "127.0.0.1" && host != "localhost" && host != "::1") {
			return nil, fmt.Errorf("--pprof-addr %q: must be a loopback host:port", p.PprofAddr)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Addr: p.PprofAddr, Handler: mux, ErrorLog: log.New(io.Discard, "", 0)}
		go srv.ListenAndServe()
		stops = append(stops, func() { srv.Close() })
	}
	if p.MemProfile != "" {
		stops = append(stops, func() {
			f, err := os.Create(p.MemProfile)
			if err != nil {
				fmt.Fprintf(logw, "warning: --memprofile: %v\n", err)
				return
			}
			runtime.GC()
			if err := rpprof.WriteHeapProfile(f); err != nil {
				fmt.Fprintf(logw, "warning: --memprofile: %v\n", err)
			}
			f.Close()
		})
	}
	return func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}, nil
}
