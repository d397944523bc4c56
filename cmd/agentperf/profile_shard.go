package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/run/rendezvous"
	"github.com/agentperf/agentperf/timing"
)

// shardFlags are the flags of a sharded run (docs/distributed.md).
type shardFlags struct {
	shard       string
	count       int
	rendezvous  string
	joinTimeout float64
}

func addShardFlags(fs *pflag.FlagSet) *shardFlags {
	s := &shardFlags{}
	fs.StringVar(&s.shard, "shard", "", "play shard I/N of the run (0-based: the global lanes i with i mod N == I; --concurrency stays the global lane count), or auto: SLURM_PROCID/SLURM_NTASKS under srun, JOB_COMPLETION_INDEX in a Kubernetes Indexed Job")
	fs.IntVar(&s.count, "shard-count", 0, "with --shard auto in a Kubernetes Indexed Job: the number of shards (the Job's completions; also $"+rendezvous.EnvShardCount+")")
	fs.StringVar(&s.rendezvous, "shard-rendezvous", "", "HOST:PORT where shard 0 listens and the other shards meet it (default under Slurm: the step's first node, a port from the job and step ids); shard 0 binds HOST when it is an IP address or localhost, every interface for a name")
	fs.Float64Var(&s.joinTimeout, "shard-join-timeout", rendezvous.DefaultJoinTimeout.Seconds(), "seconds every shard waits for the others at the start (shard 0 for every shard to join, the others for shard 0 to answer), and shard 0 for the others to finish at the end")
	return s
}

// shardRun is the resolved sharding of a run.
type shardRun struct {
	shard  timing.Shard
	source string // "flag", "slurm", "kubernetes"
	addr   string
	argv   []string
}

// resolveShard reads the sharding flags: the shard, the rendezvous address
// and the shard's artifact folder ({shard} in --output-artifact-dir, else a
// shard-I subfolder). Nothing to do without --shard.
func (r *profileRun) resolveShard(args []string) error {
	sf := r.p.shard
	if sf.shard == "" {
		if sf.count != 0 || sf.rendezvous != "" || r.fs != nil && r.fs.Changed("shard-join-timeout") {
			return usagef("--shard-count, --shard-rendezvous and --shard-join-timeout need --shard I/N or --shard auto")
		}
		return nil
	}
	if r.fs != nil && r.fs.Changed("shard-join-timeout") && !(sf.joinTimeout > 0) {
		return usagef("--shard-join-timeout %g: must be a positive number of seconds", sf.joinTimeout)
	}
	s := &shardRun{source: "flag", argv: run.ShardArgv(args)}
	var err error
	if sf.shard == "auto" {
		s.shard, s.source, err = rendezvous.Auto(os.Getenv, sf.count)
	} else {
		s.shard, err = rendezvous.ParseShard(sf.shard)
	}
	if err != nil {
		return usagef("--shard: %v", err)
	}
	lanes := r.spec.Replay.Concurrency
	if s.shard.Count > lanes {
		// Every shard refuses the run, not only the ones without a lane:
		// none waits for a shard that exits at once.
		return usagef("--shard %s: %d shards for --concurrency %d (the global lane count): shards %d…%d would have no lane; run at most %d shards", s.shard, s.shard.Count, lanes, lanes, s.shard.Count-1, lanes)
	}
	dir := r.spec.OutputDir
	if strings.Contains(dir, "{shard}") {
		r.spec.OutputDir = strings.ReplaceAll(dir, "{shard}", fmt.Sprint(s.shard.Index))
	} else if s.shard.Count > 1 {
		r.spec.OutputDir = filepath.Join(dir, fmt.Sprintf("shard-%d", s.shard.Index))
	}
	if s.shard.Count > 1 {
		s.addr = sf.rendezvous
		if s.addr == "" && s.source == "slurm" {
			if s.addr, err = rendezvous.SlurmAddr(os.Getenv); err != nil {
				return usagef("--shard-rendezvous: %v", err)
			}
		}
		if s.addr == "" {
			return usagef("--shard %s: a run of several shards needs --shard-rendezvous HOST:PORT (shard 0's host; defaulted only under Slurm)", s.shard)
		}
		if _, err := rendezvous.Port(s.addr); err != nil {
			return usagef("--shard-rendezvous %q: want HOST:PORT", s.addr)
		}
	}
	r.spec.Notes = append(r.spec.Notes, fmt.Sprintf("shard %s (from %s): lanes i with i mod %d == %d of %d; artifacts in %s", s.shard, s.source, s.shard.Count, s.shard.Index, lanes, r.spec.OutputDir))
	r.spec.Replay.Shard = s.shard
	r.spec.Shard = &run.ShardSpec{Rendezvous: s.addr, Argv: s.argv, JoinTimeout: time.Duration(sf.joinTimeout * float64(time.Second))}
	return nil
}
