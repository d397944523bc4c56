package rendezvous

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentperf/agentperf/timing"
)

// Defaults of Config.
const (
	DefaultJoinTimeout = 10 * time.Minute
	DefaultHeartbeat   = time.Second
	// DefaultReleaseLead is how far ahead of the last arrival shard 0
	// sets a barrier's release instant, so that every shard gets the
	// release before it.
	DefaultReleaseLead = 50 * time.Millisecond
	// DefaultProgress is how often a shard waiting at the rendezvous says
	// what it waits for.
	DefaultProgress = 5 * time.Second
	// DefaultLinger is Config.Linger's default.
	DefaultLinger = 15 * time.Second
)

// ErrRefused is wrapped by Join's error when shard 0 refused the shard
// (another run, a shard already joined).
var ErrRefused = errors.New("refused by the rendezvous")

// ErrTooManyShards is wrapped by Join's error, on every shard, when the
// run has more shards than lanes.
var ErrTooManyShards = errors.New("more shards than lanes")

// Key is what every shard of one run must agree on.
type Key struct {
	Seed         int64    `json:"seed"`
	Argv         []string `json:"argv"`
	CorpusDigest string   `json:"corpus_digest"`
	Lanes        int      `json:"lanes"`
}

// diff names the first field where k and o differ ("" when equal).
func (k Key) diff(o Key) string {
	switch {
	case k.Seed != o.Seed:
		return fmt.Sprintf("seed %d vs %d", k.Seed, o.Seed)
	case !slices.Equal(k.Argv, o.Argv):
		return fmt.Sprintf("command line %q vs %q", strings.Join(k.Argv, " "), strings.Join(o.Argv, " "))
	case k.CorpusDigest != o.CorpusDigest:
		return fmt.Sprintf("corpus digest %s vs %s (the shards did not load the same corpus)", k.CorpusDigest, o.CorpusDigest)
	case k.Lanes != o.Lanes:
		return fmt.Sprintf("lanes %d vs %d", k.Lanes, o.Lanes)
	}
	return ""
}

// Config configures Join.
type Config struct {
	// Addr is HOST:PORT: where shard 0 listens and what the others dial.
	// Shard 0 binds Addr itself when HOST is an IP address or localhost,
	// and the port on every interface when HOST is a name (a node's own
	// name often resolves to a loopback address in its /etc/hosts, where
	// the other nodes could not reach it), or ListenAddr when set.
	Addr string
	// ListenAddr, when set, is what shard 0 binds instead of ":PORT".
	ListenAddr string
	// Shard is this shard (Count ≥ 2).
	Shard timing.Shard
	// Key must be the same on every shard.
	Key Key
	// RunID is shard 0's run id, handed to every shard (ignored on the
	// others).
	RunID string
	// JoinTimeout bounds the wait for every shard to join (shard 0) or for
	// shard 0 to answer (the others, who retry dialling meanwhile).
	JoinTimeout time.Duration
	// Heartbeat is how often a quiet link sends a ping; a peer silent for
	// ten heartbeats has vanished.
	Heartbeat time.Duration
	// ReleaseLead: DefaultReleaseLead when 0.
	ReleaseLead time.Duration
	// Progress is how often a shard waiting to join logs what it waits
	// for: DefaultProgress when 0.
	Progress time.Duration
	// Linger is how long shard 0, when the run stopped before every shard
	// joined, keeps listening to tell the shards still coming why
	// (instead of leaving them to wait out their join timeout):
	// DefaultLinger when 0, at most the join timeout.
	Linger time.Duration
	// FailedRequestThreshold is the run's failed-request limit, a
	// fraction (0: none). Shard 0 judges it over the counts every shard
	// reports (Peer.ReportThreshold) with scenario.ExceedsThreshold and,
	// when it fires, stops every shard with it.
	FailedRequestThreshold float64
	// Logf, when set, gets the rendezvous's log lines.
	Logf func(format string, args ...any)

	// deadTime, when set (tests), is how long a peer may stay silent
	// before it has vanished, instead of ten heartbeats: a test can ping
	// often without making a goroutine stalled for a few milliseconds on
	// a loaded machine count as a dead peer.
	deadTime time.Duration
}

// silence is how long a peer may stay silent before it has vanished.
func (c *Config) silence() time.Duration {
	if c.deadTime > 0 {
		return c.deadTime
	}
	return 10 * c.Heartbeat
}

func (c *Config) defaults() {
	if c.JoinTimeout <= 0 {
		c.JoinTimeout = DefaultJoinTimeout
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.ReleaseLead <= 0 {
		c.ReleaseLead = DefaultReleaseLead
	}
	if c.Progress <= 0 {
		c.Progress = DefaultProgress
	}
	if c.Linger <= 0 {
		c.Linger = DefaultLinger
	}
	c.Linger = min(c.Linger, c.JoinTimeout)
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// msg is one line of the protocol.
type msg struct {
	T      string            `json:"t"`
	Shard  int               `json:"shard,omitempty"`
	Count  int               `json:"count,omitempty"`
	Key    *Key              `json:"key,omitempty"`
	RunID  string            `json:"run_id,omitempty"`
	Text   string            `json:"text,omitempty"`
	Name   string            `json:"name,omitempty"`
	Align  *timing.Alignment `json:"align,omitempty"`
	At     int64             `json:"at,omitempty"`
	C      int64             `json:"c,omitempty"`
	S      int64             `json:"s,omitempty"`
	Reason string            `json:"reason,omitempty"`
	// Code is a stop's kind (codeThreshold: the threshold over every
	// shard); J and F a shard's judged and failed profiling requests.
	Code string `json:"code,omitempty"`
	J    int64  `json:"j,omitempty"`
	F    int64  `json:"f,omitempty"`
}

// Message types.
const (
	tHello   = "hello"
	tWelcome = "welcome"
	tRefuse  = "refuse"
	tJoined  = "joined"
	tPing    = "ping"
	tPong    = "pong"
	tBarrier = "barrier"
	tRelease = "release"
	tAbort   = "abort"
	tStop    = "stop"
	tBye     = "bye"
	tCounts  = "counts"
	tWaiting = "waiting" // shard 0 → the joined: who is still missing

	codeThreshold = "failed_request_threshold"
)

// Peer is one shard's side of the rendezvous: a replay.Coordinator.
type Peer struct {
	cfg Config
	// runID is shard 0's.
	runID string
	// offset is this shard's clock minus shard 0's; rtt the round trip
	// it was measured over.
	offset, rtt time.Duration
	measured    bool

	mu       sync.Mutex
	releases map[string]chan msg // barrier name → its release
	stopped  chan struct{}
	stopOnce sync.Once
	reason   string
	closing  bool

	// judged and failed are this shard's threshold counts; fired is set
	// when the threshold over every shard stopped the run.
	judged, failed atomic.Int64
	fired          atomic.Bool

	// The link to shard 0 (other shards).
	conn *link
	// The hub (shard 0).
	hub *hub
}

// RunID returns the run id every shard got from shard 0.
func (p *Peer) RunID() string { return p.runID }

// Clock returns this shard's wall clock minus shard 0's and the round
// trip it was measured over (measured is false on shard 0).
func (p *Peer) Clock() (offset, rtt time.Duration, measured bool) { return p.offset, p.rtt, p.measured }

// Stopped is closed when another shard stopped the run or the rendezvous
// was lost.
func (p *Peer) Stopped() <-chan struct{} { return p.stopped }

// StopReason says why Stopped was closed.
func (p *Peer) StopReason() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reason
}

func (p *Peer) stop(reason string) {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.reason = reason
		closing := p.closing
		p.mu.Unlock()
		close(p.stopped)
		if !closing {
			p.cfg.Logf("rendezvous: %s", reason)
		}
	})
}

// releaseCh returns the release channel of barrier name.
func (p *Peer) releaseCh(name string) chan msg {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := p.releases[name]
	if ch == nil {
		ch = make(chan msg, 1)
		p.releases[name] = ch
	}
	return ch
}

// Barrier reports that this shard reached barrier name with alignment a
// and waits for every shard: it returns the release instant on this
// shard's clock and the combined alignment.
func (p *Peer) Barrier(ctx context.Context, name string, a timing.Alignment) (time.Time, timing.Alignment, error) {
	ch := p.releaseCh(name)
	if p.hub != nil {
		p.hub.arrive(0, name, a)
	} else if err := p.conn.send(msg{T: tBarrier, Name: name, Align: &a}); err != nil {
		return time.Time{}, a, fmt.Errorf("rendezvous: tell shard 0 of the %s barrier: %w", name, err)
	}
	select {
	case r := <-ch:
		at := time.Unix(0, r.At).Add(p.offset)
		return at, *r.Align, nil
	case <-p.stopped:
		return time.Time{}, a, fmt.Errorf("rendezvous: %s", p.StopReason())
	case <-ctx.Done():
		return time.Time{}, a, ctx.Err()
	}
}

// ReportThreshold records this shard's finished profiling requests
// (overflows and cancellations not counted) and the failed ones; they
// reach shard 0 within a quarter heartbeat.
func (p *Peer) ReportThreshold(judged, failed int) {
	p.judged.Store(int64(judged))
	p.failed.Store(int64(failed))
	if p.hub != nil {
		p.hub.counts(0, int64(judged), int64(failed))
	}
}

// ThresholdFired reports whether the failed-request threshold over every
// shard stopped the run.
func (p *Peer) ThresholdFired() bool { return p.fired.Load() }

// Abort tells every other shard that this one stopped the run.
func (p *Peer) Abort(reason, text string) {
	if p.hub != nil {
		p.hub.stopAll(-1, fmt.Sprintf("shard 0/%d stopped: %s: %s", p.cfg.Shard.Count, reason, text))
		return
	}
	p.conn.send(msg{T: tAbort, Reason: reason, Text: text})
}

// Close ends this shard's part: the others are told it finished (not
// vanished). Shard 0 waits, up to the join timeout, for every other shard
// to finish too (their artifacts are written after the end barrier), then
// stops listening.
func (p *Peer) Close() error {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	if p.hub != nil {
		return p.hub.close()
	}
	p.conn.send(msg{T: tBye})
	return p.conn.close()
}

// Join joins the rendezvous of cfg's run as cfg.Shard and returns when
// every shard has joined (each with its corpus loaded). Shard 0 listens;
// the others dial, retrying until JoinTimeout. A shard whose Key differs
// from shard 0's is refused (ErrRefused), and so is a second shard of
// the same index.
func Join(ctx context.Context, cfg Config) (*Peer, error) {
	cfg.defaults()
	if err := cfg.Shard.Validate(); err != nil || cfg.Shard.Count < 2 {
		return nil, fmt.Errorf("rendezvous: shard %s: a rendezvous needs index I of N ≥ 2 shards", cfg.Shard)
	}
	if cfg.Addr == "" {
		return nil, errors.New("rendezvous: no address: set --shard-rendezvous HOST:PORT (under Slurm it defaults to the step's first node)")
	}
	if l := cfg.Key.Lanes; l > 0 && l < cfg.Shard.Count {
		// Every shard knows both numbers: each fails now, none waits for a
		// shard that has nothing to play.
		return nil, fmt.Errorf("rendezvous: %w: %d shards for %d lanes: shards %d…%d would have no lane; run at most %d shards, or more lanes (--concurrency is the global lane count)",
			ErrTooManyShards, cfg.Shard.Count, l, l, cfg.Shard.Count-1, l)
	}
	p := &Peer{cfg: cfg, releases: map[string]chan msg{}, stopped: make(chan struct{})}
	if cfg.Shard.Index == 0 {
		return p, p.serve(ctx)
	}
	return p, p.dial(ctx)
}

// link is one framed connection.
type link struct {
	c   net.Conn
	r   *bufio.Reader
	wmu sync.Mutex
	// last is when something was last received (unix ns).
	last sync.Mutex
	at   time.Time
}

func newLink(c net.Conn) *link {
	return &link{c: c, r: bufio.NewReaderSize(c, 64<<10), at: time.Now()}
}

func (l *link) send(m msg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err = l.c.Write(append(b, '\n'))
	return err
}

// recv reads one message; a line that is not one is an error.
func (l *link) recv() (msg, error) {
	var m msg
	line, err := l.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return m, errors.New("rendezvous: a line over 64 KiB: not a rendezvous peer")
		}
		return m, err
	}
	if err := json.Unmarshal(line, &m); err != nil || m.T == "" {
		return m, fmt.Errorf("rendezvous: not a rendezvous message: %.80q", line)
	}
	l.last.Lock()
	l.at = time.Now()
	l.last.Unlock()
	return m, nil
}

func (l *link) quietFor() time.Duration {
	l.last.Lock()
	defer l.last.Unlock()
	return time.Since(l.at)
}

func (l *link) close() error { return l.c.Close() }

// dial joins shard 0 (shards 1…N−1): it connects, then takes the join's
// steps in protocol order (hello, clock, joined, the wait for every
// shard), closing the connection when one fails.
func (p *Peer) dial(ctx context.Context) error {
	cfg := &p.cfg
	ctx, cancel := context.WithTimeout(ctx, cfg.JoinTimeout)
	defer cancel()
	c, err := p.connect(ctx)
	if err != nil {
		return err
	}
	l := newLink(c)
	p.conn = l
	// Until the join is done, the join timeout bounds every read too.
	stopDeadline := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stopDeadline()
	if err := p.join(l); err != nil {
		c.Close()
		return err
	}
	c.SetReadDeadline(time.Time{})
	go p.clientLoop()
	return nil
}

// connect dials shard 0 until it answers or ctx ends, logging why it
// waits every cfg.Progress.
func (p *Peer) connect(ctx context.Context) (net.Conn, error) {
	cfg := &p.cfg
	var d net.Dialer
	deadline, _ := ctx.Deadline()
	tick := time.NewTicker(cfg.Progress)
	defer tick.Stop()
	for {
		c, err := d.DialContext(ctx, "tcp", cfg.Addr)
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("rendezvous: stopped while waiting for shard 0 at %s (%s): %w", cfg.Addr, dialProblem(err), ctx.Err())
			}
			if dns := dnsError(err); dns != nil {
				return nil, fmt.Errorf("rendezvous: cannot resolve shard 0's host %q (DNS: %v) within %s: check --shard-rendezvous (under Slurm: the step's first node; in Kubernetes: the pod's DNS name, which appears once shard 0's pod runs)", dns.Name, dns.Err, cfg.JoinTimeout)
			}
			return nil, fmt.Errorf("rendezvous: shard 0 at %s did not answer within %s: %w (is shard 0 running, and is the address reachable from this node?)", cfg.Addr, cfg.JoinTimeout, err)
		case <-tick.C:
			cfg.Logf("rendezvous: shard %s waiting for shard 0 at %s: %s; retrying (gives up in %s)", cfg.Shard, cfg.Addr, dialProblem(err), time.Until(deadline).Round(time.Second))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// join takes the join's steps on l, in the order shard 0 expects them:
// the hello (shard 0 welcomes or refuses), the clock measurement, joined,
// then the wait until every shard has joined.
func (p *Peer) join(l *link) error {
	if err := p.hello(l); err != nil {
		return err
	}
	if err := p.measureClock(l); err != nil {
		return err
	}
	if err := l.send(msg{T: tJoined}); err != nil {
		return err
	}
	return p.awaitShards(l)
}

// hello introduces the shard (its index, the shard count, the run's key)
// and reads shard 0's answer: a welcome with the run's id, or a refusal.
func (p *Peer) hello(l *link) error {
	cfg := &p.cfg
	if err := l.send(msg{T: tHello, Shard: cfg.Shard.Index, Count: cfg.Shard.Count, Key: &cfg.Key}); err != nil {
		return fmt.Errorf("rendezvous: hello to %s: %w", cfg.Addr, err)
	}
	m, err := l.recv()
	if err != nil {
		return fmt.Errorf("rendezvous: waiting for shard 0 at %s: %w", cfg.Addr, err)
	}
	if m.T == tRefuse {
		return fmt.Errorf("%w: %s", ErrRefused, m.Text)
	}
	if m.T != tWelcome {
		return fmt.Errorf("rendezvous: shard 0 at %s answered %q, not a welcome", cfg.Addr, m.T)
	}
	p.runID = m.RunID
	return nil
}

// measureClock measures the offset of shard 0's clock: the fastest of a
// few round trips.
func (p *Peer) measureClock(l *link) error {
	best := time.Duration(-1)
	for range 8 {
		t1 := time.Now()
		if err := l.send(msg{T: tPing, C: t1.UnixNano()}); err != nil {
			return err
		}
		m, err := p.pong(l)
		if err != nil {
			return err
		}
		t4 := time.Now()
		rtt := t4.Sub(t1)
		if best < 0 || rtt < best {
			best = rtt
			mid := t1.UnixNano() + int64(rtt)/2
			p.offset, p.rtt = time.Duration(mid-m.S), rtt
		}
	}
	p.measured = true
	return nil
}

// pong reads the answer to a clock ping.
func (p *Peer) pong(l *link) (msg, error) {
	cfg := &p.cfg
	m, err := l.recv()
	// Shard 0's heartbeat pings may arrive between a ping and its
	// pong (a slow round trip on a loaded machine): answer them, so
	// that shard 0 hears from this shard, and read on; and so may its
	// word on who is missing.
	for err == nil && (m.T == tPing || m.T == tWaiting) {
		if m.T == tWaiting {
			cfg.Logf("rendezvous: shard %s waiting: %s", cfg.Shard, m.Text)
			m, err = l.recv()
			continue
		}
		if err = l.send(msg{T: tPong, C: m.C}); err == nil {
			m, err = l.recv()
		}
	}
	if err != nil {
		return m, fmt.Errorf("rendezvous: clock measurement: %w", err)
	}
	if m.T == tStop {
		return m, fmt.Errorf("rendezvous: the run stopped before it started: %s", m.Reason)
	}
	if m.T != tPong {
		return m, fmt.Errorf("rendezvous: got %q during the clock measurement", m.T)
	}
	return m, nil
}

// awaitShards waits until shard 0 says every shard has joined, answering
// its heartbeats meanwhile.
func (p *Peer) awaitShards(l *link) error {
	cfg := &p.cfg
	cfg.Logf("rendezvous: shard %s joined shard 0 at %s; waiting for every shard to join", cfg.Shard, cfg.Addr)
	for {
		m, err := l.recv()
		if err != nil {
			return fmt.Errorf("rendezvous: waiting for every shard to join: %w", err)
		}
		switch m.T {
		case tJoined:
			return nil
		case tWaiting:
			cfg.Logf("rendezvous: shard %s waiting: %s", cfg.Shard, m.Text)
		case tPing:
			// Shard 0 drops a member it has not heard from for ten
			// heartbeats: while the others are still loading, answer.
			if err := l.send(msg{T: tPong, C: m.C}); err != nil {
				return fmt.Errorf("rendezvous: waiting for every shard to join: %w", err)
			}
		case tStop:
			return fmt.Errorf("rendezvous: the run stopped before it started: %s", m.Reason)
		}
	}
}

// clientLoop reads shard 0's messages until the link ends, and keeps the
// link alive.
func (p *Peer) clientLoop() {
	l := p.conn
	done := make(chan struct{})
	defer close(done)
	go func() {
		// Every quarter heartbeat: the threshold counts when they changed;
		// every heartbeat: a ping.
		t := time.NewTicker(p.cfg.Heartbeat / 4)
		defer t.Stop()
		var sentJ, sentF int64
		for tick := 0; ; tick++ {
			select {
			case <-done:
				return
			case <-t.C:
				if j, f := p.judged.Load(), p.failed.Load(); j != sentJ || f != sentF {
					if l.send(msg{T: tCounts, J: j, F: f}) == nil {
						sentJ, sentF = j, f
					}
				}
				if tick%4 != 0 {
					continue
				}
				if l.quietFor() > p.cfg.silence() {
					p.stop(fmt.Sprintf("shard 0 at %s sent nothing for %s: lost the rendezvous", p.cfg.Addr, p.cfg.silence()))
					l.close()
					return
				}
				l.send(msg{T: tPing, C: time.Now().UnixNano()})
			}
		}
	}()
	for {
		m, err := l.recv()
		if err != nil {
			p.mu.Lock()
			closing := p.closing
			p.mu.Unlock()
			if !closing {
				p.stop(fmt.Sprintf("lost the rendezvous with shard 0 at %s: %v", p.cfg.Addr, err))
			}
			return
		}
		switch m.T {
		case tRelease:
			if m.Align == nil {
				m.Align = &timing.Alignment{}
			}
			p.releaseCh(m.Name) <- m
		case tStop:
			if m.Code == codeThreshold {
				p.fired.Store(true)
			}
			p.stop(m.Reason)
		}
	}
}

// dnsError returns err's DNS failure, if it is one.
func dnsError(err error) *net.DNSError {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns
	}
	return nil
}

// dialProblem says in a few words why a dial failed.
func dialProblem(err error) string {
	if dns := dnsError(err); dns != nil {
		return fmt.Sprintf("cannot resolve %q (DNS: %v)", dns.Name, dns.Err)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "nothing listens there yet (connection refused)"
	}
	return err.Error()
}

// Addr parsing helpers.

// Port returns the port of HOST:PORT.
func Port(addr string) (int, error) {
	_, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(ps)
}
