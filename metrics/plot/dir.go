package plot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// Artifact file names RenderDir reads.
const (
	RecordsFile = metrics.FileRecords
)

// RenderDir rebuilds metrics_plots.png in an artifact folder from
// profile_export.jsonl and server_metrics_export.json. A missing or
// partly unreadable file is a warning (the figure is still drawn, with
// empty panels); err is set only when the figure could not be written.
func RenderDir(dir string) ([]string, error) {
	in, warnings := ReadDir(dir)
	w2, err := Render(in, filepath.Join(dir, FileName))
	return append(warnings, w2...), err
}

// ReadDir reads the figure's input from an artifact folder: the requests
// of profile_export.jsonl, the server metrics export and the profiling
// start (ProfilingStartNs). A missing or unreadable file leaves its part
// empty and is named in a warning.
//
// A folder whose run did not finish (a SIGKILL, a full disk) holds its
// records as profile_export.jsonl.partial only: they are read from there,
// as the aggregates are recomputed (metrics.Recompute), and a warning says so.
func ReadDir(dir string) (Input, []string) {
	records := filepath.Join(dir, RecordsFile)
	var note []string
	if _, err := os.Stat(records); errors.Is(err, fs.ErrNotExist) {
		if _, perr := os.Stat(records + ".partial"); perr == nil {
			records += ".partial"
			note = []string{"the request panels are drawn from " + RecordsFile + ".partial: the run did not finish, so its last records may be missing"}
		}
	}
	in, warnings := ReadFiles(records, filepath.Join(dir, servermetrics.JSONFile), ProfilingStartNs(dir))
	return in, append(note, warnings...)
}

// ReadFiles reads the figure's input from named files: records is a
// profile_export.jsonl (or the stream's .partial file while a run
// finishes), serverExport a server_metrics_export.json (a missing one
// leaves the server panels empty without a warning, as a run without
// server metrics has none), profilingStartNs the profiling start (0:
// unknown). An unreadable file leaves its part empty and is named in a
// warning.
func ReadFiles(records, serverExport string, profilingStartNs int64) (Input, []string) {
	var warnings []string
	reqs, w, err := ReadRequests(records)
	warnings = append(warnings, w...)
	if err != nil {
		warnings = append(warnings, fmt.Sprintf("plot: request panels empty: %v", err))
	}
	ex, w := ReadServerExport(serverExport)
	return Input{Requests: reqs, Server: ex, ProfilingStartNs: profilingStartNs}, append(warnings, w...)
}

// ReadServerExport reads the server panels' input: a missing file is no
// server metrics (nil, no warning); an unreadable one is named in a
// warning.
func ReadServerExport(path string) (*servermetrics.Export, []string) {
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	ex, err := servermetrics.ReadExport(path)
	if err != nil {
		return nil, []string{fmt.Sprintf("plot: server panels empty: %v", err)}
	}
	return ex, nil
}

// ProfilingStartNs reads when profiling started from the aggregate JSON of
// an artifact folder (metadata.agentperf.profiling_start_ns); 0 when it is
// not there (an aiperf folder: the plot then takes the first profiling
// request's start).
func ProfilingStartNs(dir string) int64 {
	agg, err := metrics.ReadAggregateFile(dir)
	if err != nil {
		return 0
	}
	ns, _ := metrics.JSONInt(agg.Metadata.Agentperf["profiling_start_ns"])
	return ns
}

// ReadRequests reads profile_export.jsonl into request points. Lines that
// do not decode are skipped and counted in one warning (with the first
// bad line number).
func ReadRequests(path string) ([]RequestPoint, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s does not exist", path)
		}
		return nil, nil, err
	}
	defer f.Close()
	return readRequests(f, path)
}

func readRequests(r io.Reader, path string) ([]RequestPoint, []string, error) {
	var out []RequestPoint
	var warnings []string
	br := bufio.NewReaderSize(r, 1<<16)
	line, bad, firstBad := 0, 0, 0
	var b []byte // the current line, reused (a decoded record keeps no reference to it)
	var l metrics.RecordLine
	for {
		chunk, err := br.ReadSlice('\n')
		b = append(b, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a line longer than the reader's buffer
		}
		if len(b) > 0 {
			line++
			if p, ok := parseRecordLine(b, &l); ok {
				out = append(out, p)
			} else if len(trimSpace(b)) > 0 {
				bad++
				if firstBad == 0 {
					firstBad = line
				}
			}
		}
		b = b[:0]
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, warnings, fmt.Errorf("read %s: %w", path, err)
		}
	}
	if bad > 0 {
		warnings = append(warnings, fmt.Sprintf("plot: %s: %d line(s) could not be decoded (first at line %d) and were left out", path, bad, firstBad))
	}
	return out, warnings, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// parseRecordLine decodes one profile_export.jsonl line
// (metrics.DecodeRecordLine) into the point the figure draws.
func parseRecordLine(b []byte, l *metrics.RecordLine) (RequestPoint, bool) {
	if metrics.DecodeRecordLine(b, l) != nil {
		return RequestPoint{}, false
	}
	r := &l.Record
	return RequestPoint{
		StartNs:   r.RequestStartNs,
		EndNs:     r.RequestEndNs,
		TTFTms:    l.Values.TTFT,
		LatencyMs: l.Values.RequestLatency,
		ITLms:     l.Values.ITL,
		OK:        r.Bucket.OK(),
		Phase:     string(r.Phase),
	}, true
}
