package dataset

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// vmRSS returns the resident set size of this process in bytes, or -1.
func vmRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 2 {
				kb, err := strconv.ParseFloat(string(f[0]), 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return -1
}

// cpuTime returns the user+system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start: on a shared,
// loaded machine it is steadier than wall time (ns/op), which includes
// waiting for a core. It counts every goroutine, the GC included.
func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
	}
}

// reportRSS reports the resident set after the timed loop, and how much it
// grew over it, in MB.
func reportRSS(b *testing.B, before float64) {
	after := vmRSS()
	if after < 0 || before < 0 {
		return
	}
	b.ReportMetric(after/1e6, "rss-MB")
	b.ReportMetric((after-before)/1e6, "rss-growth-MB")
}

// freeMemory returns the Go heap to the OS so that RSS readings reflect
// what the benchmark body keeps, not what setup left behind.
func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// BenchmarkOpenCold measures a cold start on the 200-trace corpus: read
// and parse the source, select, hash it, write the cache file and map it.
func BenchmarkOpenCold(b *testing.B) {
	src := Source{InputFile: cacheSharedTraces(b, "kvct-200.jsonl.zst")}
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		b.StartTimer()
		t0 := cpuTime()
		c, err := Open(context.Background(), src, Options{CacheEnabled: true, CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if c.FromCache() {
			b.Fatal("cold open hit the cache")
		}
		c.Close()
		cpu += cpuTime() - t0
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// warmCache builds the cache for src in dir and lets a full verification
// mark it, as the first warm open after a build does.
func warmCache(b *testing.B, src Source, opt Options) string {
	b.Helper()
	c, err := Open(context.Background(), src, opt)
	if err != nil {
		b.Fatal(err)
	}
	path := c.CachePath()
	c.Close()
	time.Sleep(markerMargin + 10*time.Millisecond)
	if err := VerifyCache(path); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchWarm times Open on a warm cache (key resolution through the stat
// index, mapping, validation) followed by Close, and reports the resident
// set with one corpus open.
func benchWarm(b *testing.B, src Source, opt Options, wantLen int, extra map[string]float64) {
	freeMemory()
	before := vmRSS()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		c, err := Open(context.Background(), src, opt)
		if err != nil {
			b.Fatal(err)
		}
		if !c.FromCache() || c.Len() != wantLen {
			b.Fatalf("warm open: FromCache=%v Len=%d, want a hit with %d traces", c.FromCache(), c.Len(), wantLen)
		}
		c.Close()
	}
	b.StopTimer()
	reportCPU(b, cpu0)
	c, err := Open(context.Background(), src, opt)
	if err != nil {
		b.Fatal(err)
	}
	reportRSS(b, before)
	for unit, v := range extra {
		b.ReportMetric(v, unit)
	}
	c.Close()
}

// BenchmarkOpenWarm measures a warm open of the 200-trace corpus.
func BenchmarkOpenWarm(b *testing.B) {
	src := Source{InputFile: cacheSharedTraces(b, "kvct-200.jsonl.zst")}
	opt := Options{CacheEnabled: true, CacheDir: b.TempDir()}
	path := warmCache(b, src, opt)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	benchWarm(b, src, opt, 200, map[string]float64{"file-MB": float64(fi.Size()) / 1e6})
}

// BenchmarkOpenWarm10x measures a warm open of a corpus ten times the
// 200-trace one (2000 traces: ten copies with renamed ids). The source file
// is the real corpus, but the cache file at its key holds the larger
// corpus: a warm open never reads the source, so this measures exactly a
// warm open of the large corpus.
func BenchmarkOpenWarm10x(b *testing.B) {
	src := Source{InputFile: cacheSharedTraces(b, "kvct-200.jsonl.zst")}
	opt := Options{CacheEnabled: true, CacheDir: b.TempDir()}
	path := warmCache(b, src, opt)
	base, _, err := ReadPath(src.InputFile, ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	big := make([]Trace, 0, 10*len(base))
	for k := range 10 {
		for _, t := range base {
			t.ID = fmt.Sprintf("%s-copy%d", t.ID, k)
			big = append(big, t) // shares the hash-id slices: no extra memory
		}
	}
	loc, err := Locate(context.Background(), src, opt)
	if err != nil {
		b.Fatal(err)
	}
	if err := writeCache(path, big, cacheMeta{Identity: Identity{SourceType: "file", Traces: len(big)}, Key: loc.Key}); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	base, big = nil, nil
	time.Sleep(markerMargin + 10*time.Millisecond)
	if err := VerifyCache(path); err != nil {
		b.Fatal(err)
	}
	benchWarm(b, src, opt, 2000, map[string]float64{"file-MB": float64(fi.Size()) / 1e6})
}

// BenchmarkVerifyCache measures a full verification (every checksum) of
// the 200-trace corpus's cache file: what the first open after a build, or
// `agentperf dataset cache verify`, costs.
func BenchmarkVerifyCache(b *testing.B) {
	src := Source{InputFile: cacheSharedTraces(b, "kvct-200.jsonl.zst")}
	path := warmCache(b, src, Options{CacheEnabled: true, CacheDir: b.TempDir()})
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if err := VerifyCache(path); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkTrace measures materialising one trace from a mapped corpus
// (hash ids are views, so the cost is per request, not per block).
func BenchmarkTrace(b *testing.B) {
	src := Source{InputFile: cacheSharedTraces(b, "kvct-200.jsonl.zst")}
	opt := Options{CacheEnabled: true, CacheDir: b.TempDir()}
	warmCache(b, src, opt)
	c, err := Open(context.Background(), src, opt)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = c.Trace(i % c.Len())
		i++
	}
}
