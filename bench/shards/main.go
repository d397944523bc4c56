// Command shards measures what sharding one run costs and buys on one
// machine: the same run (zero-latency sim, the synthetic corpus) as one
// process of N×L lanes and as N shard processes of L lanes each, met at a
// rendezvous on loopback. For each process it reports the client CPU
// (user + system), the requests, and the send lateness (request start −
// the scheduled send time, over the profiling records), and draws them in
// one figure.
//
//	go build -o /tmp/agentperf ./cmd/agentperf
//	go run ./bench/shards -bin /tmp/agentperf -lanes 1000 -shards 3 -duration 20 -out /tmp/shards
package main

import (
	"flag"
	"fmt"
	"image/color"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentperf/agentperf/metrics"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

type result struct {
	name       string
	cpu        time.Duration
	requests   int
	lateMs     []float64 // sorted
	exit       int
	wall       time.Duration
	profWindow float64
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func main() {
	bin := flag.String("bin", "", "the agentperf binary (required)")
	lanes := flag.Int("lanes", 1000, "lanes per shard")
	shards := flag.Int("shards", 3, "shards")
	duration := flag.Int("duration", 20, "profiling seconds")
	out := flag.String("out", "/tmp/shards", "folder for the runs, the figure and the table")
	flag.Parse()
	if *bin == "" {
		log.Fatal("-bin is required")
	}
	os.RemoveAll(*out)
	os.MkdirAll(*out, 0o755)
	port := freePort()
	sim := exec.Command(*bin, "sim", "--port", strconv.Itoa(port), "--zero-latency", "--model", "demo", "--quiet")
	if err := sim.Start(); err != nil {
		log.Fatal(err)
	}
	defer sim.Process.Kill()
	time.Sleep(time.Second)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	total := *lanes * *shards
	base := func(dir string) []string {
		return []string{"profile", "--url", url, "--public-dataset", "synthetic:traces=200,max-context=16384", "--model", "demo", "--tokenizer", "builtin",
			"--concurrency", strconv.Itoa(total), "--benchmark-duration", strconv.Itoa(*duration), "--benchmark-grace-period", "2",
			"--streaming", "--use-server-token-count", "--allow-dataset-wrap",
			"--ui-type", "none", "--no-plot", "--no-server-metrics", "--output-artifact-dir", dir}
	}
	var all []result
	// One process of every lane.
	all = append(all, runAll(*bin, [][]string{base(filepath.Join(*out, "single"))}, []string{fmt.Sprintf("1 × %d", total)}, []string{filepath.Join(*out, "single")})...)
	// N shards of L lanes.
	rdv := fmt.Sprintf("127.0.0.1:%d", freePort())
	var argvs [][]string
	var names, dirs []string
	for i := range *shards {
		d := filepath.Join(*out, fmt.Sprintf("shard-%d", i))
		argvs = append(argvs, append(base(filepath.Join(*out, "shard-{shard}")), "--shard", fmt.Sprintf("%d/%d", i, *shards), "--shard-rendezvous", rdv))
		names = append(names, fmt.Sprintf("shard %d/%d (%d)", i, *shards, *lanes))
		dirs = append(dirs, d)
	}
	all = append(all, runAll(*bin, argvs, names, dirs)...)
	table(all, *out)
	if err := figure(all, filepath.Join(*out, "shards.png"), total, *shards, *lanes); err != nil {
		log.Fatal(err)
	}
}

// runAll runs the processes at once and measures each.
func runAll(bin string, argvs [][]string, names, dirs []string) []result {
	res := make([]result, len(argvs))
	var wg sync.WaitGroup
	for i, a := range argvs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, a...)
			logf, _ := os.Create(dirs[i] + ".log")
			cmd.Stdout, cmd.Stderr = logf, logf
			t0 := time.Now()
			err := cmd.Run()
			logf.Close()
			r := result{name: names[i], wall: time.Since(t0)}
			if cmd.ProcessState != nil {
				r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				r.exit = cmd.ProcessState.ExitCode()
			} else {
				log.Printf("%s: %v", names[i], err)
			}
			r.requests, r.lateMs = lateness(filepath.Join(dirs[i], "profile_export.jsonl"))
			res[i] = r
		}()
	}
	wg.Wait()
	return res
}

// lateness reads the profiling records' start − scheduled send, in ms.
func lateness(path string) (int, []float64) {
	f, err := os.Open(path)
	if err != nil {
		log.Printf("%v", err)
		return 0, nil
	}
	defer f.Close()
	var late []float64
	n := 0
	if _, err := metrics.ReadRecords(f, path, false, func(l *metrics.RecordLine) error {
		r := &l.Record
		if r.Phase != metrics.PhaseProfiling {
			return nil
		}
		n++
		if r.CreditIssuedNs > 0 {
			late = append(late, float64(r.RequestStartNs-r.CreditIssuedNs)/1e6)
		}
		return nil
	}); err != nil {
		log.Printf("%v", err)
	}
	slices.Sort(late)
	return n, late
}

func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(p / 100 * float64(len(xs)-1))
	return xs[i]
}

func table(all []result, out string) {
	f, _ := os.Create(filepath.Join(out, "shards.md"))
	defer f.Close()
	line := func(format string, args ...any) {
		fmt.Printf(format, args...)
		fmt.Fprintf(f, format, args...)
	}
	line("| process | profiling requests | client CPU (s) | CPU ms per 1k requests | lateness p50 (ms) | p99 (ms) | p99.9 (ms) | max (ms) | exit |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range all {
		per := 0.0
		if r.requests > 0 {
			per = r.cpu.Seconds() * 1e6 / float64(r.requests)
		}
		line("| %s | %d | %.2f | %.0f | %.3f | %.3f | %.3f | %.3f | %d |\n", r.name, r.requests, r.cpu.Seconds(), per,
			pct(r.lateMs, 50), pct(r.lateMs, 99), pct(r.lateMs, 99.9), pct(r.lateMs, 100), r.exit)
	}
}

func figure(all []result, path string, total, shards, lanes int) error {
	const rows = 1
	img := vgimg.New(vg.Points(900), vg.Points(360))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: 2, PadX: vg.Points(30), PadY: vg.Points(10), PadTop: vg.Points(10), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(10)}
	names := make([]string, len(all))
	for i, r := range all {
		names[i] = r.name
	}
	// Lateness p50 and p99 per process.
	p1 := gplot.New()
	p1.Title.Text = fmt.Sprintf("send lateness: 1 × %d lanes vs %d × %d", total, shards, lanes)
	p1.Y.Label.Text = "ms (request start − scheduled send)"
	var p50, p99 plotter.Values
	for _, r := range all {
		p50 = append(p50, pct(r.lateMs, 50))
		p99 = append(p99, pct(r.lateMs, 99))
	}
	w := vg.Points(18)
	b50, err := plotter.NewBarChart(p50, w)
	if err != nil {
		return err
	}
	b50.Color = color.RGBA{R: 70, G: 130, B: 180, A: 255}
	b50.Offset = -w / 2
	b99, err := plotter.NewBarChart(p99, w)
	if err != nil {
		return err
	}
	b99.Color = color.RGBA{R: 220, G: 120, B: 40, A: 255}
	b99.Offset = w / 2
	p1.Add(b50, b99)
	p1.Legend.Add("p50", b50)
	p1.Legend.Add("p99", b99)
	p1.Legend.Top = true
	p1.NominalX(names...)
	// CPU per process.
	p2 := gplot.New()
	p2.Title.Text = "client CPU per process (user + system)"
	p2.Y.Label.Text = "CPU seconds"
	var cpu plotter.Values
	for _, r := range all {
		cpu = append(cpu, r.cpu.Seconds())
	}
	bc, err := plotter.NewBarChart(cpu, vg.Points(30))
	if err != nil {
		return err
	}
	bc.Color = color.RGBA{R: 90, G: 160, B: 90, A: 255}
	p2.Add(bc)
	p2.NominalX(names...)
	canvases := gplot.Align([][]*gplot.Plot{{p1, p2}}, tiles, dc)
	p1.Draw(canvases[0][0])
	p2.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}
