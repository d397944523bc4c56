package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/timing"
)

// freeAddr returns a loopback address with a port that was free.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func testCfg(addr string, i, n int) Config {
	return Config{Addr: addr, ListenAddr: addr, Shard: timing.Shard{Index: i, Count: n}, RunID: "run-1",
		Key:         Key{Seed: 7, Argv: []string{"profile", "--concurrency", "9"}, CorpusDigest: "abc", Lanes: 9},
		JoinTimeout: 20 * time.Second, Heartbeat: 50 * time.Millisecond, Linger: 500 * time.Millisecond}
}

// joinAll joins n shards at once and returns their peers (index order).
func joinAll(t *testing.T, cfgs []Config) ([]*Peer, []error) {
	t.Helper()
	peers := make([]*Peer, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			peers[i], errs[i] = Join(context.Background(), cfgs[i])
		}()
	}
	wg.Wait()
	return peers, errs
}

// TestBarriersReleaseTogether: three shards join, get shard 0's run id
// and a clock measurement, and each barrier releases every shard at one
// instant with the alignments combined.
func TestBarriersReleaseTogether(t *testing.T) {
	addr := freeAddr(t)
	var cfgs []Config
	for i := range 3 {
		c := testCfg(addr, i, 3)
		if i > 0 {
			c.RunID = "ignored"
		}
		cfgs = append(cfgs, c)
	}
	peers, errs := joinAll(t, cfgs)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("join: %v", err)
	}
	for i, p := range peers {
		if p.RunID() != "run-1" {
			t.Fatalf("shard %d: run id %q, want shard 0's", i, p.RunID())
		}
		if _, rtt, measured := p.Clock(); measured != (i > 0) || i > 0 && rtt <= 0 {
			t.Fatalf("shard %d: clock measured=%v rtt=%s", i, measured, rtt)
		}
	}
	aligns := []timing.Alignment{{T0: 5 * time.Second, Has: true}, {T0: 3 * time.Second, Has: true}, {Anchorless: false}}
	type got struct {
		at time.Time
		a  timing.Alignment
	}
	res := make([]got, 3)
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 30 * time.Millisecond) // arrive at different times
			at, a, err := p.Barrier(context.Background(), "warmup", aligns[i])
			if err != nil {
				t.Error(err)
			}
			res[i] = got{at, a}
		}()
	}
	wg.Wait()
	for i, r := range res {
		if r.a != (timing.Alignment{T0: 3 * time.Second, Has: true}) {
			t.Errorf("shard %d: alignment %+v, want the combined T0 3s", i, r.a)
		}
		off, _, _ := peers[i].Clock()
		// On one host the clocks are one clock: the release instants agree
		// within the measured offset.
		if d := r.at.Sub(res[0].at) - off; d > time.Millisecond || d < -time.Millisecond {
			t.Errorf("shard %d released at %s, shard 0 at %s (offset %s)", i, r.at, res[0].at, off)
		}
	}
	for _, p := range peers[1:] {
		p.Close()
	}
	if err := peers[0].Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range peers {
		select {
		case <-p.Stopped():
			t.Errorf("shard %d stopped (%s) by a clean finish", i, p.StopReason())
		default:
		}
	}
}

// TestJoinRefuses: a shard of another run (a different key), a second
// shard with one index, or a shard count that does not match is refused.
func TestJoinRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"other corpus", func(c *Config) { c.Key.CorpusDigest = "def" }, "corpus digest"},
		{"other argv", func(c *Config) { c.Key.Argv = []string{"profile"} }, "command line"},
		{"other seed", func(c *Config) { c.Key.Seed = 8 }, "seed"},
		{"count", func(c *Config) { c.Shard.Count = 3 }, "a run of 2 shards"},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := freeAddr(t)
			c0, c1 := testCfg(addr, 0, 2), testCfg(addr, 1, 2)
			c0.JoinTimeout = 2 * time.Second
			c.mod(&c1)
			_, errs := joinAll(t, []Config{c0, c1})
			if !errors.Is(errs[1], ErrRefused) || !strings.Contains(errs[1].Error(), c.want) {
				t.Fatalf("shard 1: %v, want ErrRefused naming %q", errs[1], c.want)
			}
			// Shard 0 does not wait out its join timeout for a shard that
			// cannot come: it stops at once with the refusal (issue 34,
			// case 8).
			if errs[0] == nil || !strings.Contains(errs[0].Error(), "the run cannot start as asked") || !strings.Contains(errs[0].Error(), c.want) {
				t.Fatalf("shard 0: %v, want a stop naming the refusal", errs[0])
			}
		})
	}
	t.Run("duplicate", func(t *testing.T) {
		addr := freeAddr(t)
		c0 := testCfg(addr, 0, 3)
		c0.JoinTimeout = 3 * time.Second
		_, errs := joinAll(t, []Config{c0, testCfg(addr, 1, 3), testCfg(addr, 1, 3)})
		refused := 0
		for _, e := range errs[1:] {
			if errors.Is(e, ErrRefused) && strings.Contains(e.Error(), "joined already") {
				refused++
			}
		}
		if refused != 1 {
			t.Fatalf("errors %v: want exactly one shard 1 refused as a duplicate", errs)
		}
		for i, e := range errs {
			if e == nil || !strings.Contains(e.Error(), "joined already") {
				t.Errorf("shard %d: %v, want every shard stopped, naming the duplicate", i, e)
			}
		}
	})
}

// TestStopReachesEveryShard: an abort on one shard stops the others with
// its reason; a shard whose connection closes without its goodbye has
// vanished, and stops the others too.
func TestStopReachesEveryShard(t *testing.T) {
	for _, c := range []struct {
		name string
		act  func(p *Peer)
		want string
	}{
		{"abort", func(p *Peer) { p.Abort("failed_request_threshold", "too many errors") }, "shard 2/3 stopped: failed_request_threshold"},
		{"vanish", func(p *Peer) { p.conn.close() }, "shard 2/3 vanished"},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := freeAddr(t)
			peers, errs := joinAll(t, []Config{testCfg(addr, 0, 3), testCfg(addr, 1, 3), testCfg(addr, 2, 3)})
			for i, err := range errs {
				if err != nil {
					t.Fatalf("shard %d: %v", i, err)
				}
			}
			c.act(peers[2])
			for _, p := range peers[:2] {
				select {
				case <-p.Stopped():
				case <-time.After(10 * time.Second):
					t.Fatalf("shard %d not stopped", p.cfg.Shard.Index)
				}
				if !strings.Contains(p.StopReason(), c.want) {
					t.Fatalf("shard %d: stop reason %q, want %q", p.cfg.Shard.Index, p.StopReason(), c.want)
				}
				// A barrier after the stop fails at once.
				if _, _, err := p.Barrier(context.Background(), "end", timing.Alignment{}); err == nil {
					t.Fatalf("shard %d: a barrier after the stop succeeded", p.cfg.Shard.Index)
				}
			}
			peers[1].Close()
			peers[0].hub.shutdown()
		})
	}
}

// TestLostShardZero: a shard that loses shard 0 stops.
func TestLostShardZero(t *testing.T) {
	addr := freeAddr(t)
	peers, errs := joinAll(t, []Config{testCfg(addr, 0, 2), testCfg(addr, 1, 2)})
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	peers[0].hub.shutdown()
	select {
	case <-peers[1].Stopped():
	case <-time.After(10 * time.Second):
		t.Fatal("shard 1 not stopped when shard 0 went away")
	}
	if !strings.Contains(peers[1].StopReason(), "lost the rendezvous") {
		t.Fatalf("stop reason %q", peers[1].StopReason())
	}
}

func TestAuto(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		env   map[string]string
		count int
		want  timing.Shard
		src   string
		err   string
	}{
		{"slurm", map[string]string{"SLURM_PROCID": "2", "SLURM_NTASKS": "3"}, 0, timing.Shard{Index: 2, Count: 3}, "slurm", ""},
		{"slurm wins over k8s", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "JOB_COMPLETION_INDEX": "5"}, 0, timing.Shard{Index: 0, Count: 2}, "slurm", ""},
		{"slurm no ntasks", map[string]string{"SLURM_PROCID": "1"}, 0, timing.Shard{}, "", "SLURM_NTASKS"},
		{"slurm out of range", map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "3"}, 0, timing.Shard{}, "", "index < count"},
		{"k8s flag", map[string]string{"JOB_COMPLETION_INDEX": "4"}, 8, timing.Shard{Index: 4, Count: 8}, "kubernetes", ""},
		{"k8s env", map[string]string{"JOB_COMPLETION_INDEX": "1", EnvShardCount: "2"}, 0, timing.Shard{Index: 1, Count: 2}, "kubernetes", ""},
		{"k8s no count", map[string]string{"JOB_COMPLETION_INDEX": "1"}, 0, timing.Shard{}, "", "--shard-count"},
		{"k8s bad", map[string]string{"JOB_COMPLETION_INDEX": "x"}, 2, timing.Shard{}, "", "non-negative integer"},
		{"nothing", map[string]string{}, 0, timing.Shard{}, "", "no shard in the environment"},
	} {
		sh, src, err := Auto(func(k string) string { return c.env[k] }, c.count)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one naming %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || sh != c.want || src != c.src {
			t.Errorf("%s: %v %q %v, want %v %q", c.name, sh, src, err, c.want, c.src)
		}
	}
}

func TestParseShard(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]timing.Shard{"0/1": {Index: 0, Count: 1}, "2/3": {Index: 2, Count: 3}, " 1 / 4 ": {Index: 1, Count: 4}} {
		if got, err := ParseShard(s); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"3/3", "-1/2", "1", "a/b", "1/0", ""} {
		if _, err := ParseShard(s); err == nil {
			t.Errorf("ParseShard(%q) accepted", s)
		}
	}
}

func TestFirstHostAndSlurmAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"node01": "node01", "node[03-05,9],gpu1": "node03", "gpu1,node[1-2]": "gpu1", "a[7]": "a7", "r[10-11]-ib": "r10-ib", "": "",
	} {
		if got := FirstHost(in); got != want {
			t.Errorf("FirstHost(%q) = %q, want %q", in, got, want)
		}
	}
	env := map[string]string{"SLURM_STEP_NODELIST": "gpu[4-7]", "SLURM_JOB_ID": "1234", "SLURM_STEP_ID": "0"}
	a, err := SlurmAddr(func(k string) string { return env[k] })
	if err != nil || !strings.HasPrefix(a, "gpu4:") {
		t.Fatalf("SlurmAddr = %q, %v", a, err)
	}
	env["SLURM_STEP_ID"] = "1"
	b, _ := SlurmAddr(func(k string) string { return env[k] })
	if a == b {
		t.Fatalf("steps 0 and 1 of one job got the same address %s", a)
	}
	if p, err := Port(b); err != nil || p < 20000 || p >= 40000 {
		t.Fatalf("port of %s: %d %v", b, p, err)
	}
	if _, err := SlurmAddr(func(string) string { return "" }); err == nil {
		t.Fatal("SlurmAddr without a node list succeeded")
	}
}

// TestThresholdOverEveryShard: three shards each with 12 failures in 40
// requests — not enough evidence on any one of them for a 10 % limit —
// together fire the failed-request threshold, at shard 0, and every shard
// is stopped by it.
func TestThresholdOverEveryShard(t *testing.T) {
	addr := freeAddr(t)
	var cfgs []Config
	for i := range 3 {
		c := testCfg(addr, i, 3)
		c.FailedRequestThreshold = 0.1
		cfgs = append(cfgs, c)
	}
	peers, errs := joinAll(t, cfgs)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	peers[1].ReportThreshold(40, 12)
	peers[2].ReportThreshold(40, 12)
	time.Sleep(200 * time.Millisecond)
	select {
	case <-peers[0].Stopped():
		t.Fatalf("stopped on two shards' 24 of 80: %s", peers[0].StopReason())
	default:
	}
	peers[0].ReportThreshold(40, 12)
	for i, p := range peers {
		select {
		case <-p.Stopped():
		case <-time.After(10 * time.Second):
			t.Fatalf("shard %d not stopped", i)
		}
		if !p.ThresholdFired() || !strings.Contains(p.StopReason(), "36 of 120") {
			t.Fatalf("shard %d: fired=%v, reason %q", i, p.ThresholdFired(), p.StopReason())
		}
	}
	peers[1].Close()
	peers[2].Close()
	peers[0].hub.shutdown()
}

// TestJoinWithHeartbeatsDuringTheClockMeasurement: with a heartbeat short
// against a round trip, shard 0's pings arrive between a joining shard's
// ping and its pong, and while it waits for slower shards to join; the
// join still succeeds (a shard once closed its link on such a ping, or
// stayed silent while waiting, and shard 0 reported it as vanished).
func TestJoinWithHeartbeatsDuringTheClockMeasurement(t *testing.T) {
	addr := freeAddr(t)
	var cfgs []Config
	for i := range 3 {
		c := testCfg(addr, i, 3)
		c.Heartbeat = 2 * time.Millisecond // pings interleave with the 8 round trips
		// A peer silent for 300 ms has vanished, not for ten heartbeats
		// (20 ms): a goroutine of this -race binary on a loaded 2-core
		// machine is stalled that long now and then, and the hub then
		// dropped a shard that was answering. Shard 2 still comes more
		// than three dead times late, so a shard that stays silent while
		// it waits is still dropped before the join completes.
		c.deadTime = 300 * time.Millisecond
		cfgs = append(cfgs, c)
	}
	cfgs[2].JoinTimeout = 20 * time.Second
	peers := make([]*Peer, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 2 {
				time.Sleep(time.Second) // 500 heartbeats, over three dead times, late: the others wait
			}
			peers[i], errs[i] = Join(context.Background(), cfgs[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("join: %v", err)
	}
	for i := len(peers) - 1; i >= 0; i-- { // shard 0 last: it waits for the others' goodbyes
		peers[i].Close()
	}
}

// logTo collects a peer's log lines.
type logTo struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logTo) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

func (l *logTo) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRefusalStopsEveryShardAtOnce (issue 34, case 8): shards 0 and 1
// joined and shard 2 came with another seed: every shard stops at once
// with the reason, none waits out the join timeout.
func TestRefusalStopsEveryShardAtOnce(t *testing.T) {
	addr := freeAddr(t)
	cfgs := []Config{testCfg(addr, 0, 3), testCfg(addr, 1, 3), testCfg(addr, 2, 3)}
	cfgs[2].Key.Seed = 8
	cfgs[0].Linger = 3 * time.Second // shard 1 may come after shard 2 was refused: it is told why
	start := time.Now()
	peers, errs := joinAll(t, cfgs)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the shards took %s to give up (join timeout %s)", d, cfgs[0].JoinTimeout)
	}
	for i, e := range errs {
		if e == nil || !strings.Contains(e.Error(), "seed 7 vs 8") {
			t.Errorf("shard %d: %v, want a stop naming the seeds", i, e)
		}
	}
	if peers[0].hub != nil {
		peers[0].hub.shutdown()
	}
}

// TestTooManyShardsFailsEveryShard (issue 34, case 8): with more shards
// than lanes every shard fails at once, the ones with a lane too.
func TestTooManyShardsFailsEveryShard(t *testing.T) {
	addr := freeAddr(t)
	var cfgs []Config
	for i := range 3 {
		c := testCfg(addr, i, 3)
		c.Key.Lanes = 2
		cfgs = append(cfgs, c)
	}
	start := time.Now()
	_, errs := joinAll(t, cfgs)
	if d := time.Since(start); d > time.Second {
		t.Errorf("the shards took %s to fail", d)
	}
	for i, e := range errs {
		if !errors.Is(e, ErrTooManyShards) || !strings.Contains(e.Error(), "3 shards for 2 lanes: shards 2…2 would have no lane") {
			t.Errorf("shard %d: %v", i, e)
		}
	}
}

// TestWaitingSaysWhatFor (issue 34, case 8): while a shard is missing,
// shard 0 and the joined shards say every Progress which one they wait
// for; a shard whose shard 0 is not up says so, and a name that does not
// resolve is reported as a DNS failure.
func TestWaitingSaysWhatFor(t *testing.T) {
	addr := freeAddr(t)
	var l0, l1 logTo
	c0, c1 := testCfg(addr, 0, 3), testCfg(addr, 1, 3)
	c0.JoinTimeout, c1.JoinTimeout = 1500*time.Millisecond, 5*time.Second
	c0.Progress, c1.Progress = 200*time.Millisecond, 200*time.Millisecond
	c0.Logf, c1.Logf = l0.logf, l1.logf
	_, errs := joinAll(t, []Config{c0, c1})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "missing shard 2") {
		t.Errorf("shard 0: %v", errs[0])
	}
	want := "waits for shard 2 to join (2 of 3 joined; shard 0 gives up in"
	if !strings.Contains(l0.String(), want) {
		t.Errorf("shard 0's log lacks %q:\n%s", want, l0.String())
	}
	if !strings.Contains(l1.String(), "shard 1/3 waiting: shard 0 at "+addr+" "+want) {
		t.Errorf("shard 1's log does not say what it waits for:\n%s", l1.String())
	}

	// Nothing listens at the address.
	var l2 logTo
	c2 := testCfg(freeAddr(t), 1, 2)
	c2.JoinTimeout, c2.Progress, c2.Logf = time.Second, 200*time.Millisecond, l2.logf
	if _, err := Join(context.Background(), c2); err == nil || !strings.Contains(err.Error(), "did not answer within 1s") {
		t.Errorf("no shard 0: %v", err)
	}
	if !strings.Contains(l2.String(), "shard 1/2 waiting for shard 0 at") || !strings.Contains(l2.String(), "nothing listens there yet (connection refused)") {
		t.Errorf("log while shard 0 is not up:\n%s", l2.String())
	}

	// A host name that does not resolve.
	var l3 logTo
	c3 := testCfg("no-such-host.invalid:7070", 1, 2)
	c3.JoinTimeout, c3.Progress, c3.Logf = time.Second, 200*time.Millisecond, l3.logf
	err := func() error { _, err := Join(context.Background(), c3); return err }()
	if err == nil || !strings.Contains(err.Error(), `cannot resolve shard 0's host "no-such-host.invalid" (DNS:`) {
		t.Errorf("unresolvable host: %v", err)
	}
	if !strings.Contains(l3.String(), `cannot resolve "no-such-host.invalid" (DNS:`) {
		t.Errorf("log for an unresolvable host:\n%s", l3.String())
	}
}

// TestShardZeroListensOnTheGivenAddress (issue 34, case 8): given
// 127.0.0.1:PORT, shard 0 binds 127.0.0.1, not every interface; a host
// name binds the port on every interface.
func TestShardZeroListensOnTheGivenAddress(t *testing.T) {
	addr := freeAddr(t)
	c0, c1 := testCfg(addr, 0, 2), testCfg(addr, 1, 2)
	c0.ListenAddr = ""
	peers, errs := joinAll(t, []Config{c0, c1})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := peers[0].hub.ln.Addr().String(); got != addr {
		t.Errorf("shard 0 listens at %s, want %s", got, addr)
	}
	peers[1].Close()
	peers[0].Close()
	for in, want := range map[string]string{"127.0.0.1:70": "127.0.0.1:70", "[::1]:70": "[::1]:70", "localhost:70": "localhost:70", "gpu07:70": ":70", "bench-0.bench:7070": ":7070"} {
		if got, err := listenAddr(in); err != nil || got != want {
			t.Errorf("listenAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := listenAddr("gpu07"); err == nil {
		t.Error("an address without a port accepted")
	}
}
