package rendezvous

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/timing"
)

// EnvShardCount is the environment variable that gives the shard count in
// a Kubernetes Indexed Job (where only the index is set), when the
// count is not given on the command line.
const EnvShardCount = "AGENTPERF_SHARD_COUNT"

// Auto finds this process's shard from its environment (env looks a
// variable up; "" is unset): under Slurm SLURM_PROCID of SLURM_NTASKS; in
// a Kubernetes Indexed Job JOB_COMPLETION_INDEX of count (count ≤ 0: the
// EnvShardCount variable). It returns the shard and where it came from
// ("slurm", "kubernetes").
func Auto(env func(string) string, count int) (timing.Shard, string, error) {
	num := func(name string) (int, bool, error) {
		v := strings.TrimSpace(env(name))
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, true, fmt.Errorf("%s=%q: want a non-negative integer", name, v)
		}
		return n, true, nil
	}
	if id, ok, err := num("SLURM_PROCID"); ok || err != nil {
		if err != nil {
			return timing.Shard{}, "", err
		}
		n, ok, err := num("SLURM_NTASKS")
		if err != nil {
			return timing.Shard{}, "", err
		}
		if !ok {
			if n, ok, err = num("SLURM_NPROCS"); err != nil || !ok {
				return timing.Shard{}, "", fmt.Errorf("SLURM_PROCID is set but SLURM_NTASKS is not: run under srun (one task per shard)")
			}
		}
		sh := timing.Shard{Index: id, Count: n}
		if err := sh.Validate(); err != nil {
			return timing.Shard{}, "", fmt.Errorf("SLURM_PROCID=%d SLURM_NTASKS=%d: %w", id, n, err)
		}
		return sh, "slurm", nil
	}
	if idx, ok, err := num("JOB_COMPLETION_INDEX"); ok || err != nil {
		if err != nil {
			return timing.Shard{}, "", err
		}
		if count <= 0 {
			c, ok, err := num(EnvShardCount)
			if err != nil {
				return timing.Shard{}, "", err
			}
			if !ok {
				return timing.Shard{}, "", fmt.Errorf("JOB_COMPLETION_INDEX=%d is set (a Kubernetes Indexed Job) but not the shard count: pass --shard-count or set %s to the Job's completions", idx, EnvShardCount)
			}
			count = c
		}
		sh := timing.Shard{Index: idx, Count: count}
		if err := sh.Validate(); err != nil {
			return timing.Shard{}, "", fmt.Errorf("JOB_COMPLETION_INDEX=%d of %d: %w", idx, count, err)
		}
		return sh, "kubernetes", nil
	}
	return timing.Shard{}, "", fmt.Errorf("--shard auto: no shard in the environment: neither SLURM_PROCID/SLURM_NTASKS (srun) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set; use --shard I/N")
}

// ParseShard parses "I/N" (0-based index I of N shards).
func ParseShard(s string) (timing.Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return timing.Shard{}, fmt.Errorf("shard %q: want I/N (index I of N shards, 0-based) or auto", s)
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(i))
	b, err2 := strconv.Atoi(strings.TrimSpace(n))
	if err1 != nil || err2 != nil {
		return timing.Shard{}, fmt.Errorf("shard %q: want I/N with integers (index I of N shards, 0-based)", s)
	}
	sh := timing.Shard{Index: a, Count: b}
	if err := sh.Validate(); err != nil {
		return timing.Shard{}, fmt.Errorf("shard %q: want 0 ≤ I < N", s)
	}
	return sh, nil
}

// SlurmAddr is the default rendezvous under Slurm: the first node of the
// step (SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST, else
// SLURMD_NODENAME) and a port derived from the job and step ids, in
// 20000…39999, so two steps on one node do not collide.
func SlurmAddr(env func(string) string) (string, error) {
	list := env("SLURM_STEP_NODELIST")
	if list == "" {
		list = env("SLURM_JOB_NODELIST")
	}
	if list == "" {
		list = env("SLURM_NODELIST")
	}
	host := FirstHost(list)
	if host == "" {
		return "", fmt.Errorf("no Slurm node list in the environment (SLURM_STEP_NODELIST, SLURM_JOB_NODELIST): set --shard-rendezvous HOST:PORT")
	}
	job, step := env("SLURM_JOB_ID"), env("SLURM_STEP_ID")
	if job == "" {
		job = env("SLURM_JOBID")
	}
	if step == "" {
		step = env("SLURM_STEPID")
	}
	h := fnv.New32a()
	h.Write([]byte(job + "." + step))
	return fmt.Sprintf("%s:%d", host, 20000+h.Sum32()%20000), nil
}

// FirstHost returns the first host of a Slurm host list ("node[03-05,9],gpu1"
// → "node03"), "" for an empty one.
func FirstHost(list string) string {
	list = strings.TrimSpace(list)
	if list == "" {
		return ""
	}
	end := len(list)
	depth := 0
	for i, c := range list {
		if c == '[' {
			depth++
		} else if c == ']' {
			depth--
		} else if c == ',' && depth == 0 {
			end = i
			break
		}
	}
	first := list[:end]
	open := strings.IndexByte(first, '[')
	if open < 0 {
		return first
	}
	prefix := first[:open]
	rest := first[open+1:]
	if cl := strings.IndexByte(rest, ']'); cl >= 0 {
		suffix := rest[cl+1:]
		rest = rest[:cl]
		r, _, _ := strings.Cut(rest, ",")
		lo, _, _ := strings.Cut(r, "-")
		return prefix + lo + suffix
	}
	return prefix
}
