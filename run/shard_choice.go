package run

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentperf/agentperf/run/rendezvous"
	"github.com/agentperf/agentperf/timing"
)

// ShardChoice is how the user picked the shard a process plays: --shard
// I/N or auto, with its companions. ApplyShard resolves it.
type ShardChoice struct {
	// Shard is "I/N", or "auto" (Slurm's or a Kubernetes Indexed Job's
	// environment: rendezvous.Auto).
	Shard string
	// Count is --shard-count (for auto in a Kubernetes Indexed Job).
	Count int
	// Rendezvous is --shard-rendezvous HOST:PORT ("" = the Slurm default).
	Rendezvous string
	// JoinTimeout is --shard-join-timeout (0 = the default).
	JoinTimeout time.Duration
	// Args is the command line, from which the run's shared argv is
	// derived (ShardArgv).
	Args []string
	// Getenv reads the environment.
	Getenv func(string) string
}

// ApplyShard makes s the run of shard c of the global lanes
// (s.Replay.Concurrency): it sets the lanes' shard, the rendezvous and
// the output folder (OutputDir's {shard}, else shard-I beside the other
// shards' folders when there are several), and notes where the shard
// came from. An error names the flag at fault.
func (s *Spec) ApplyShard(c ShardChoice) error {
	var (
		sh     timing.Shard
		source = "flag"
		err    error
	)
	if c.Shard == "auto" {
		sh, source, err = rendezvous.Auto(c.Getenv, c.Count)
	} else {
		sh, err = rendezvous.ParseShard(c.Shard)
	}
	if err != nil {
		return fmt.Errorf("--shard: %v", err)
	}
	lanes := s.Replay.Concurrency
	if sh.Count > lanes {
		return fmt.Errorf("--shard %s: %d shards for --concurrency %d (the global lane count): shards %d…%d would have no lane; run at most %d shards", sh, sh.Count, lanes, lanes, sh.Count-1, lanes)
	}
	if strings.Contains(s.OutputDir, "{shard}") {
		s.OutputDir = strings.ReplaceAll(s.OutputDir, "{shard}", fmt.Sprint(sh.Index))
	} else if sh.Count > 1 {
		s.OutputDir = filepath.Join(s.OutputDir, fmt.Sprintf("shard-%d", sh.Index))
	}
	addr := ""
	if sh.Count > 1 {
		addr = c.Rendezvous
		if addr == "" && source == "slurm" {
			if addr, err = rendezvous.SlurmAddr(c.Getenv); err != nil {
				return fmt.Errorf("--shard-rendezvous: %v", err)
			}
		}
		if addr == "" {
			return fmt.Errorf("--shard %s: a run of several shards needs --shard-rendezvous HOST:PORT (shard 0's host; defaulted only under Slurm)", sh)
		}
		if _, err := rendezvous.Port(addr); err != nil {
			return fmt.Errorf("--shard-rendezvous %q: want HOST:PORT", addr)
		}
	}
	s.Notes = append(s.Notes, fmt.Sprintf("shard %s (from %s): lanes i with i mod %d == %d of %d; artifacts in %s", sh, source, sh.Count, sh.Index, lanes, s.OutputDir))
	s.Replay.Shard = sh
	s.Shard = &ShardSpec{Rendezvous: addr, Argv: ShardArgv(c.Args), JoinTimeout: c.JoinTimeout}
	return nil
}
