package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/atomicfile"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/run/rendezvous"
)

// FileShard is the manifest a shard of a sharded run writes beside its
// artifacts: who it is, which run it belongs to, its clock against shard
// 0's, and what Merge needs to finish the merged run (docs/distributed.md).
const FileShard = "agentperf_shard.json"

// shardFormat is the manifest's format version.
const shardFormat = 1

// ShardManifest identifies one shard of a sharded run. The caller fills
// the identity and the clock; Finish adds the run's Result and what it
// finished the shard with, and writes it (Input.Shard).
type ShardManifest struct {
	Format int `json:"format"`
	// RunID is the run's id, the same on every shard (the benchmark id).
	RunID string `json:"run_id"`
	// Index and Count: shard Index of Count.
	Index int `json:"shard"`
	Count int `json:"shards"`
	// Seed, Argv (the command line with the shard's own value left out:
	// ShardArgv) and CorpusDigest (CorpusDigest) must be the same on every
	// shard of a run.
	Seed         int64    `json:"seed"`
	Argv         []string `json:"argv"`
	CorpusDigest string   `json:"corpus_digest"`
	// Clock is this shard's wall clock against shard 0's, measured at the
	// rendezvous.
	Clock ClockOffset `json:"clock"`
	// Stop says how the shard's run ended with respect to the others: ""
	// when it ran to the end, else the stop (this shard's own or one
	// passed on from another).
	Stop string `json:"stop,omitempty"`

	// Written by Finish.
	Result *replay.Result `json:"result,omitempty"`
	Finish *shardFinish   `json:"finish,omitempty"`
}

// ClockOffset is a shard's wall clock against shard 0's: OffsetNs is this
// shard's clock minus shard 0's, measured at the rendezvous over a round
// trip of RTTNs (so within ±RTTNs/2). Measured is false for shard 0 and
// when nothing was measured.
type ClockOffset struct {
	OffsetNs int64 `json:"offset_ns"`
	RTTNs    int64 `json:"rtt_ns"`
	Measured bool  `json:"measured"`
}

// shardFinish is the part of a shard's Finish Input a merge finishes with.
type shardFinish struct {
	Scenario          string           `json:"scenario,omitempty"`
	StaticReasons     []string         `json:"static_reasons,omitempty"`
	Generation        string           `json:"generation"`
	DurationNs        int64            `json:"duration_ns"`
	CoverageRequired  float64          `json:"coverage_required,omitempty"`
	CoverageMinNs     int64            `json:"coverage_min_phase_ns,omitempty"`
	Concurrency       int              `json:"concurrency"`
	OverflowRateLimit *float64         `json:"overflow_rate_limit,omitempty"`
	OverflowAdvice    string           `json:"overflow_advice,omitempty"`
	InputConfig       map[string]any   `json:"input_config,omitempty"`
	Corpus            dataset.Identity `json:"corpus"`
	PublicDataset     bool             `json:"public_dataset,omitempty"`
	Described         Described        `json:"described"`
	NoPlot            bool             `json:"no_plot,omitempty"`
	Warnings          []string         `json:"warnings,omitempty"`
	SliceDurationNs   int64            `json:"slice_duration_ns,omitempty"`
	Version           string           `json:"version,omitempty"`
	ServerDerived     any              `json:"server_derived,omitempty"`
}

// ShardArgv returns argv with what may differ between the shards of one
// run taken out: the --shard value, the artifact folder
// (--output-artifact-dir, --artifact-dir) and how long a shard waits for
// the others (--shard-join-timeout), so that every shard of a run
// started with --shard I/N or --shard auto, into a folder of its own, has
// the same one.
func ShardArgv(argv []string) []string {
	var out []string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		name, _, hasValue := strings.Cut(a, "=")
		switch name {
		case "--shard", "--output-artifact-dir", "--artifact-dir", "--shard-join-timeout":
			if !hasValue {
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// CorpusDigest is a digest of a corpus identity that every machine reading
// the same corpus computes alike: the identity without its local path.
func CorpusDigest(id dataset.Identity) string {
	id.Path = ""
	b, _ := json.Marshal(id)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

func (m *ShardManifest) metadata() map[string]any {
	return map[string]any{
		"shard": m.Index, "shards": m.Count, "run_id": m.RunID,
		"clock_offset_ns": m.Clock.OffsetNs, "clock_rtt_ns": m.Clock.RTTNs, "clock_measured": m.Clock.Measured,
		"stop": m.Stop,
	}
}

// String returns "shard I/N of run ID".
func (m *ShardManifest) String() string {
	return "shard " + strconv.Itoa(m.Index) + "/" + strconv.Itoa(m.Count) + " of run " + m.RunID
}

// writeShardManifest completes in.Shard with res and the Input and
// writes it to dir.
func writeShardManifest(dir string, in Input, res *replay.Result) error {
	m := *in.Shard
	m.Format = shardFormat
	m.Result = res
	fin := &shardFinish{
		Scenario: in.Scenario, StaticReasons: in.StaticReasons, Generation: res.Generation.Name,
		DurationNs: int64(in.Duration), Concurrency: in.Concurrency, OverflowAdvice: in.OverflowAdvice,
		CoverageRequired: in.Coverage.Required, CoverageMinNs: int64(in.Coverage.MinPhase),
		InputConfig: in.InputConfig, Corpus: in.Corpus, PublicDataset: in.PublicDataset, NoPlot: in.NoPlot,
		Warnings: in.Warnings,
	}
	if in.OverflowRateLimit.Set {
		v := in.OverflowRateLimit.V
		fin.OverflowRateLimit = &v
	}
	switch {
	case in.Synth != nil:
		fin.Described = Described{Synthesis: in.Synth.Describe(), Tokenizer: tokenizerMetadata(in.Tokenizer, in.Synth)}
	case in.Described != nil:
		fin.Described = *in.Described
	}
	// What the aggregates recorded that the merge needs again.
	if agg, err := readAggregateMeta(dir); err == nil {
		fin.SliceDurationNs = int64(agg.sliceDuration)
		fin.Version = agg.version
		fin.ServerDerived = agg.serverDerived
		fin.Warnings = agg.warnings
	}
	m.Finish = fin
	b, err := m.Encode()
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(dir, FileShard), b)
}

// Encode writes m as agentperf_shard.json: its fields by their JSON
// names, indented by two spaces, a final newline. DecodeShardManifest
// reads it back.
func (m *ShardManifest) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", FileShard, err)
	}
	return append(b, '\n'), nil
}

// DecodeShardManifest decodes an agentperf_shard.json as Encode writes
// it; its format must be the one this agentperf writes. An error names
// the field whose value has the wrong type.
func DecodeShardManifest(data []byte) (*ShardManifest, error) {
	var m ShardManifest
	// Numbers inside its free-form parts (the synthesis and tokenizer
	// descriptions, input_config, the server figures) stay as written:
	// an integer is not turned into a float (a 64-bit seed would lose
	// digits), and the merged folder writes them as the shards did.
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m.Format != shardFormat {
		return nil, fmt.Errorf("format %d, this agentperf reads format %d (merge the shards with the agentperf that ran them)", m.Format, shardFormat)
	}
	return &m, nil
}

// aggregateMeta is what a shard's aggregate JSON holds for the merge.
type aggregateMeta struct {
	sliceDuration time.Duration
	version       string
	serverDerived any
	warnings      []string
}

func readAggregateMeta(dir string) (aggregateMeta, error) {
	agg, err := metrics.ReadAggregateFile(dir)
	if err != nil {
		return aggregateMeta{}, err
	}
	ap := agg.Metadata.Agentperf
	slice, _ := metrics.JSONFloat(ap["slice_duration_sec"])
	return aggregateMeta{version: agg.AiperfVersion, sliceDuration: time.Duration(slice * 1e9),
		serverDerived: ap["server_derived"], warnings: agg.Metadata.Warnings}, nil
}

// ReadShardManifest reads the manifest of the shard folder dir.
func ReadShardManifest(dir string) (*ShardManifest, error) {
	path := filepath.Join(dir, FileShard)
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s is not a finished shard folder: it has no %s (written when an `agentperf profile --shard` run finishes; a shard that was killed or never started writes none)", dir, FileShard)
		}
		return nil, err
	}
	m, err := DecodeShardManifest(b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if m.Result == nil || m.Finish == nil {
		return nil, fmt.Errorf("%s: incomplete manifest (no result): the shard did not finish", path)
	}
	return m, nil
}

// joinShards joins a sharded Spec's rendezvous (nil without one): the
// barrier of every shard's corpus loaded, with the run's key checked.
func joinShards(ctx context.Context, s *Spec, runID string, l *Loaded, lg *runLog) (*rendezvous.Peer, error) {
	sh := s.Replay.Shard
	if s.Shard == nil || !sh.Sharded() {
		return nil, nil
	}
	lg.Printf("shard %s: joining the rendezvous at %s", sh, s.Shard.Rendezvous)
	peer, err := rendezvous.Join(ctx, rendezvous.Config{
		Addr: s.Shard.Rendezvous, Shard: sh, RunID: runID, Logf: lg.Printf, JoinTimeout: s.Shard.JoinTimeout,
		FailedRequestThreshold: s.FailedRequestThreshold,
		Key:                    rendezvous.Key{Seed: s.Replay.Seed, Argv: s.Shard.Argv, CorpusDigest: CorpusDigest(l.identity()), Lanes: s.Replay.Concurrency},
	})
	if err != nil {
		if errors.Is(err, rendezvous.ErrRefused) {
			return nil, inputErr(fmt.Errorf("shard %s: %w", sh, err))
		}
		return nil, fmt.Errorf("shard %s: %w", sh, err)
	}
	if off, rtt, ok := peer.Clock(); ok {
		lg.Printf("shard %s: run %s; clock %+.3f ms from shard 0's (measured over a %.3f ms round trip)", sh, peer.RunID(), float64(off)/1e6, float64(rtt)/1e6)
	} else {
		lg.Printf("shard %s: run %s; every shard joined", sh, peer.RunID())
	}
	return peer, nil
}

// manifest is the shard's manifest for Finish (nil for an unsharded run).
func (s *Spec) manifest(res *replay.Result, l *Loaded, peer *rendezvous.Peer) *ShardManifest {
	if s.Shard == nil {
		return nil
	}
	sh := s.Replay.Shard
	m := &ShardManifest{RunID: res.BenchmarkID, Index: sh.Index, Count: max(sh.Count, 1), Seed: s.Replay.Seed, Argv: s.Shard.Argv, CorpusDigest: CorpusDigest(l.identity())}
	if peer != nil {
		off, rtt, ok := peer.Clock()
		m.Clock = ClockOffset{OffsetNs: int64(off), RTTNs: int64(rtt), Measured: ok}
		select {
		case <-peer.Stopped():
			m.Stop = peer.StopReason()
		default:
		}
	}
	if m.Stop == "" && res.Aborted != "" {
		m.Stop = "this shard stopped: " + res.Aborted + ": " + res.AbortMessage
	}
	return m
}
