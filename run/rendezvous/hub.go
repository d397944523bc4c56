package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
)

// hub is shard 0's side: the listener and a member per other shard.
type hub struct {
	p  *Peer
	ln net.Listener

	mu       sync.Mutex
	members  map[int]*member
	started  bool // every shard joined
	joinedCh chan struct{}
	arrived  map[string]int
	align    map[string]timing.Alignment
	stopped  bool
	// stopReason is why the run stopped (stopAll's), told to shards that
	// come after.
	stopReason string
	closing    bool
	// judged and failed are every shard's latest threshold counts (shard
	// 0's at index 0).
	judged, failed []int64
	done           chan struct{} // closed when every member said goodbye or left
	quit           chan struct{} // closed by shutdown
	quitOnce       sync.Once
}

type member struct {
	idx    int
	l      *link
	joined bool
	gone   bool // said goodbye, or its link ended
}

// serve listens and waits for every other shard to join (shard 0).
func (p *Peer) serve(ctx context.Context) error {
	cfg := &p.cfg
	p.runID = cfg.RunID
	addr := cfg.ListenAddr
	if addr == "" {
		var err error
		if addr, err = listenAddr(cfg.Addr); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("rendezvous: shard 0 cannot listen at %s: %w (another run on this port? set --shard-rendezvous HOST:PORT)", addr, err)
	}
	h := &hub{p: p, ln: ln, judged: make([]int64, cfg.Shard.Count), failed: make([]int64, cfg.Shard.Count), members: map[int]*member{}, joinedCh: make(chan struct{}), arrived: map[string]int{}, align: map[string]timing.Alignment{}, done: make(chan struct{}), quit: make(chan struct{})}
	p.hub = h
	cfg.Logf("rendezvous: shard 0 listening at %s for %d more shards", ln.Addr(), cfg.Shard.Count-1)
	go h.accept()
	go h.heartbeat()
	t := time.NewTimer(cfg.JoinTimeout)
	defer t.Stop()
	tick := time.NewTicker(cfg.Progress)
	defer tick.Stop()
	giveUp := time.Now().Add(cfg.JoinTimeout)
wait:
	for {
		select {
		case <-h.joinedCh:
			h.broadcast(-1, msg{T: tJoined})
			cfg.Logf("rendezvous: all %d shards joined", cfg.Shard.Count)
			return nil
		case <-tick.C:
			text := fmt.Sprintf("shard 0 at %s waits for shard %s to join (%d of %d joined; shard 0 gives up in %s)",
				cfg.Addr, h.missing(), h.joinedCount()+1, cfg.Shard.Count, time.Until(giveUp).Round(time.Second))
			cfg.Logf("rendezvous: %s", text)
			h.broadcast(-1, msg{T: tWaiting, Text: text})
		case <-p.stopped:
			err = fmt.Errorf("rendezvous: %w: %s", errStoppedBeforeStart, p.StopReason())
			break wait
		case <-t.C:
			err = fmt.Errorf("rendezvous: only %d of %d shards joined within %s: missing shard %s", h.joinedCount()+1, cfg.Shard.Count, cfg.JoinTimeout, h.missing())
			break wait
		case <-ctx.Done():
			err = fmt.Errorf("rendezvous: waiting for the shards to join: %w", ctx.Err())
			break wait
		}
	}
	h.stopAll(-1, "shard 0 gave up waiting for every shard to join")
	if errors.Is(err, errStoppedBeforeStart) {
		// Shards still on their way are told why (handle refuses them with
		// the stop's reason) rather than left to dial until their timeout.
		cfg.Logf("rendezvous: telling shards that come in the next %s that the run stopped", cfg.Linger)
		select {
		case <-time.After(cfg.Linger):
		case <-ctx.Done():
		}
	}
	h.shutdown()
	return err
}

// errStoppedBeforeStart is wrapped by serve's error when the run stopped
// before every shard joined.
var errStoppedBeforeStart = errors.New("the run stopped before every shard joined")

// listenAddr is what shard 0 binds for the rendezvous address addr: addr
// itself when its host is an IP address or localhost, else the port on
// every interface (see Config.Addr).
func listenAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("rendezvous: address %q: %w (want HOST:PORT)", addr, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", fmt.Errorf("rendezvous: address %q: port %q is not a number", addr, port)
	}
	if net.ParseIP(host) != nil || host == "localhost" {
		return addr, nil
	}
	return ":" + port, nil
}

func (h *hub) joinedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.members {
		if m.joined {
			n++
		}
	}
	return n
}

func (h *hub) missing() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := ""
	for i := 1; i < h.p.cfg.Shard.Count; i++ {
		if m := h.members[i]; m == nil || !m.joined {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprint(i)
		}
	}
	return s
}

func (h *hub) accept() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		go h.handle(newLink(c))
	}
}

// handle runs one shard's link: its hello, then its messages.
func (h *hub) handle(l *link) {
	l.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	m, err := l.recv()
	if err != nil || m.T != tHello || m.Key == nil {
		l.close()
		return
	}
	l.c.SetReadDeadline(time.Time{})
	mb := h.admit(l, m)
	if mb == nil {
		return
	}
	l.send(msg{T: tWelcome, RunID: h.p.runID})
	h.serveMember(mb)
}

// admit makes the shard whose hello is m a member, or refuses it and
// returns nil. The checks of the shard's place in the run and its
// registration hold the lock together, so two shards with one index
// cannot both join.
func (h *hub) admit(l *link, m msg) *member {
	why, all := h.p.cfg.checkHello(m)
	var mb *member
	if why == "" {
		h.mu.Lock()
		why, all = h.checkPlace(m)
		if why == "" {
			mb = &member{idx: m.Shard, l: l}
			h.members[m.Shard] = mb
		}
		h.mu.Unlock()
	}
	if mb == nil {
		h.refuse(l, why, all)
	}
	return mb
}

// checkHello says why the shard whose hello is m is not a shard of this
// run ("" when it is): its shard count, its index, its run's key. Each
// reason means the run cannot be the one asked for (all).
func (c *Config) checkHello(m msg) (why string, all bool) {
	switch {
	case m.Count != c.Shard.Count:
		return fmt.Sprintf("shard %d/%d joined a run of %d shards", m.Shard, m.Count, c.Shard.Count), true
	case m.Shard < 1 || m.Shard >= c.Shard.Count:
		return fmt.Sprintf("shard index %d is not one of 1…%d", m.Shard, c.Shard.Count-1), true
	}
	if d := c.Key.diff(*m.Key); d != "" {
		return fmt.Sprintf("shard %d/%d is not a shard of shard 0's run: %s (shard 0's first)", m.Shard, m.Count, d), true
	}
	return "", false
}

// checkPlace says why shard m cannot join now ("" when it can): its index
// is taken, or the run has started or stopped. A taken index before the
// start means two shards with one index, and the run cannot start as asked
// (all). The caller holds h.mu.
func (h *hub) checkPlace(m msg) (why string, all bool) {
	switch {
	case h.members[m.Shard] != nil && !h.started && !h.stopped:
		return fmt.Sprintf("shard %d/%d has joined already (two shards with one index: check --shard or SLURM_PROCID)", m.Shard, m.Count), true
	case h.members[m.Shard] != nil:
		return fmt.Sprintf("shard %d/%d has joined already (two shards with one index: check --shard or SLURM_PROCID)", m.Shard, m.Count), false
	case h.started:
		return fmt.Sprintf("shard %d/%d came too late: the run has started", m.Shard, m.Count), false
	case h.stopped:
		return fmt.Sprintf("shard %d/%d came after the run stopped: %s", m.Shard, m.Count, h.stopReason), false
	}
	return "", false
}

// refuse tells the shard on l why it cannot join and closes its link.
// With all, while the run has not started, it stops every shard too: the
// run cannot be the one asked for (a shard of another run or shape, two
// shards with one index), and waiting out the join timeout would not
// change that.
func (h *hub) refuse(l *link, why string, all bool) {
	l.send(msg{T: tRefuse, Text: why})
	h.p.cfg.Logf("rendezvous: refused a shard from %s: %s", l.c.RemoteAddr(), why)
	l.close()
	if !all {
		return
	}
	h.mu.Lock()
	started := h.started
	h.mu.Unlock()
	if !started {
		h.stopAll(0, "a shard was refused before the run started, so the run cannot start as asked: "+why)
	}
}

// serveMember reads a member's messages until its link ends.
func (h *hub) serveMember(mb *member) {
	cfg := &h.p.cfg
	l := mb.l
	for {
		m, err := l.recv()
		if err != nil {
			h.left(mb, err)
			return
		}
		switch m.T {
		case tPing:
			l.send(msg{T: tPong, C: m.C, S: time.Now().UnixNano()})
		case tJoined:
			h.joined(mb)
		case tBarrier:
			a := timing.Alignment{}
			if m.Align != nil {
				a = *m.Align
			}
			h.arrive(mb.idx, m.Name, a)
		case tCounts:
			h.counts(mb.idx, m.J, m.F)
		case tAbort:
			h.stopAll(mb.idx, fmt.Sprintf("shard %d/%d stopped: %s: %s", mb.idx, cfg.Shard.Count, m.Reason, m.Text))
		case tBye:
			h.mu.Lock()
			mb.gone = true
			h.mu.Unlock()
			h.checkDone()
		}
	}
}

// joined marks mb joined; the last shard to join starts the run.
func (h *hub) joined(mb *member) {
	h.mu.Lock()
	defer h.mu.Unlock()
	mb.joined = true
	all := len(h.members) == h.p.cfg.Shard.Count-1
	for _, o := range h.members {
		all = all && o.joined
	}
	if all && !h.started {
		h.started = true
		close(h.joinedCh)
	}
}

// left handles the end of a member's link: a shard that did not say
// goodbye has vanished, and the run stops everywhere.
func (h *hub) left(mb *member, err error) {
	h.mu.Lock()
	bye := mb.gone
	mb.gone = true
	closing := h.closing
	h.mu.Unlock()
	mb.l.close()
	if !bye && !closing {
		h.stopAll(mb.idx, fmt.Sprintf("shard %d/%d vanished: its connection closed without finishing (%v): killed, or its node failed", mb.idx, h.p.cfg.Shard.Count, err))
	}
	h.checkDone()
}

func (h *hub) checkDone() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closing {
		return
	}
	for _, m := range h.members {
		if !m.gone {
			return
		}
	}
	select {
	case <-h.done:
	default:
		close(h.done)
	}
}

// heartbeat pings every member and drops the silent ones.
func (h *hub) heartbeat() {
	hb := h.p.cfg.Heartbeat
	t := time.NewTicker(hb)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-t.C:
		}
		h.mu.Lock()
		var ms []*member
		for _, m := range h.members {
			if !m.gone {
				ms = append(ms, m)
			}
		}
		h.mu.Unlock()
		for _, m := range ms {
			if m.l.quietFor() > h.p.cfg.silence() {
				h.left(m, fmt.Errorf("nothing received for %s", h.p.cfg.silence()))
				continue
			}
			m.l.send(msg{T: tPing, C: time.Now().UnixNano()})
		}
	}
}

// arrive counts shard idx at barrier name; the last arrival releases it.
func (h *hub) arrive(idx int, name string, a timing.Alignment) {
	h.mu.Lock()
	h.arrived[name]++
	h.align[name] = h.align[name].Combine(a)
	if h.arrived[name] < h.p.cfg.Shard.Count {
		h.mu.Unlock()
		return
	}
	comb := h.align[name]
	h.mu.Unlock()
	at := time.Now().Add(h.p.cfg.ReleaseLead).UnixNano()
	h.broadcast(-1, msg{T: tRelease, Name: name, At: at, Align: &comb})
	h.p.releaseCh(name) <- msg{T: tRelease, Name: name, At: at, Align: &comb}
}

// counts records shard idx's threshold counts and judges the threshold
// over every shard.
func (h *hub) counts(idx int, judged, failed int64) {
	frac := h.p.cfg.FailedRequestThreshold
	h.mu.Lock()
	h.judged[idx], h.failed[idx] = judged, failed
	var j, f int64
	for i := range h.judged {
		j += h.judged[i]
		f += h.failed[i]
	}
	fire := !h.stopped && scenario.ExceedsThreshold(int(f), int(j), frac)
	if fire {
		h.stopped = true
	}
	h.mu.Unlock()
	if !fire {
		return
	}
	reason := fmt.Sprintf("failed_request_threshold: over every shard, %d of %d finished profiling requests failed (%.1f%%), above the %.1f%% limit with 99.9%% confidence; stopping every shard",
		f, j, 100*float64(f)/float64(j), 100*frac)
	h.broadcast(-1, msg{T: tStop, Reason: reason, Code: codeThreshold})
	h.p.fired.Store(true)
	h.p.stop(reason)
}

// broadcast sends m to every member but except.
func (h *hub) broadcast(except int, m msg) {
	h.mu.Lock()
	var ls []*link
	for i, mb := range h.members {
		if i != except && !mb.gone {
			ls = append(ls, mb.l)
		}
	}
	h.mu.Unlock()
	for _, l := range ls {
		l.send(m)
	}
}

// stopAll stops the run on every shard but from (-1: shard 0 itself,
// whose engine stopped already); a stop from another shard stops shard
// 0 too.
func (h *hub) stopAll(from int, reason string) {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.stopped, h.stopReason = true, reason
	h.mu.Unlock()
	h.broadcast(from, msg{T: tStop, Reason: reason})
	if from >= 0 {
		h.p.stop(reason)
	}
}

// close waits (up to the join timeout) for every other shard to finish,
// then stops listening.
func (h *hub) close() error {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	h.checkDone()
	t := time.NewTimer(h.p.cfg.JoinTimeout)
	defer t.Stop()
	var err error
	select {
	case <-h.done:
	case <-t.C:
		err = errors.New("rendezvous: not every shard finished within the join timeout")
	}
	h.shutdown()
	return err
}

func (h *hub) shutdown() {
	h.quitOnce.Do(func() { close(h.quit) })
	h.ln.Close()
	h.mu.Lock()
	for _, m := range h.members {
		m.l.close()
	}
	h.mu.Unlock()
}
