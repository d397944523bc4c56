package main

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/run/rendezvous"
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

// resolveShard makes the run the shard the flags pick (run.Spec.ApplyShard).
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
	return asUsage(r.spec.ApplyShard(run.ShardChoice{Shard: sf.shard, Count: sf.count, Rendezvous: sf.rendezvous,
		JoinTimeout: seconds(sf.joinTimeout), Args: args, Getenv: os.Getenv}))
}
