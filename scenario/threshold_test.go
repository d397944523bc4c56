package scenario

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// firesAt feeds outcomes ('F' failed, '.' ok) and returns the 1-based
// record at which the threshold fired (0 = never) and its message.
func firesAt(th *Threshold, outcomes string) (int, string) {
	at, msg := 0, ""
	for i, c := range outcomes {
		if abort, m := th.Observe(c == 'F'); abort {
			if at != 0 {
				return -1, "fired twice"
			}
			at, msg = i+1, m
		}
	}
	return at, msg
}

func TestThreshold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		frac        float64
		concurrency int
		outcomes    string
		want        int
	}{
		// Armed at max(concurrency, 10): nine failures in a row cannot fire.
		{"floor 10 holds", 0.1, 4, "FFFFFFFFF", 0},
		{"fires on the 10th record", 0.1, 4, "FFFFFFFFF.", 10},
		{"concurrency 0 counts as 1", 0.1, 0, "FFFFFFFFFF", 10},
		// Concurrency above 10 raises the floor.
		{"floor = concurrency", 0.1, 20, "FFFFFFFFFFFFFFFFFFF", 0},
		{"fires at concurrency", 0.1, 20, "FFFFFFFFFFFFFFFFFFF.", 20},
		// Exactly at the limit is allowed (strictly greater aborts).
		{"at the limit", 0.1, 1, "F.........", 0},
		{"at the limit twice", 0.1, 1, "F..................F", 0},
		{"just above", 0.1, 1, "F.........F", 11},
		{"1 of 20 at 5% ok", 0.05, 10, strings.Repeat(".", 19) + "F", 0},
		{"5 of 100 ok, 6 of 101 fires", 0.05, 10, strings.Repeat(".", 95) + "FFFFFF", 101},
		{"below when armed, fires after", 0.25, 1, "FF........FFF", 11},
		{"disabled", 0, 1, "FFFFFFFFFFFFFFFFFFFF", 0},
		{"limit 1 never exceeded", 1, 1, "FFFFFFFFFFFFFFFFFFFF", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			th := NewThreshold(c.frac, c.concurrency)
			got, msg := firesAt(th, c.outcomes)
			if got != c.want {
				t.Fatalf("fired at record %d (%s), want %d", got, msg, c.want)
			}
			if got > 0 {
				total, failed := th.Counts()
				for _, w := range []string{"failed_request_threshold", "of", "%", "server logs"} {
					if !strings.Contains(msg, w) {
						t.Errorf("message %q lacks %q", msg, w)
					}
				}
				if total != len(c.outcomes) || !th.Fired() || failed != strings.Count(c.outcomes, "F") {
					t.Errorf("Counts = %d/%d fired %v", failed, total, th.Fired())
				}
			}
		})
	}
}

func TestThresholdMessage(t *testing.T) {
	t.Parallel()
	th := NewThreshold(0.10, 8)
	_, msg := firesAt(th, "F.........F")
	want := "Run aborted (failed_request_threshold): 2 of 11 profiling requests failed (18.18%), above the limit of 10.00% (--failed-request-threshold 0.1, checked once 10 records were in). Check the inference server logs for the cause of the failures."
	if msg != want {
		t.Errorf("message\n%s\nwant\n%s", msg, want)
	}
}

func TestThresholdFiresOnceConcurrently(t *testing.T) {
	t.Parallel()
	th := NewThreshold(0.05, 64)
	var fired atomic.Int32
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if abort, _ := th.Observe((g+i)%3 == 0); abort {
					fired.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if fired.Load() != 1 {
		t.Fatalf("fired %d times, want exactly once", fired.Load())
	}
	var nilT *Threshold
	if abort, _ := nilT.Observe(true); abort || nilT.Fired() {
		t.Error("nil threshold fired")
	}
}

func TestValidateThreshold(t *testing.T) {
	t.Parallel()
	for _, ok := range []float64{0, 0.05, 0.1, 1} {
		if err := ValidateThreshold(ok); err != nil {
			t.Errorf("%v rejected: %v", ok, err)
		}
	}
	for _, bad := range []float64{-0.1, 1.01, 10} {
		if err := ValidateThreshold(bad); err == nil || !strings.Contains(err.Error(), "--failed-request-threshold") {
			t.Errorf("%v: error %v", bad, err)
		}
	}
}
