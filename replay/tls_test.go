package replay

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTLSVerificationIsOnByDefault: against a server whose certificate no
// system root signs, the warmup fails with a certificate error and the run
// aborts; only Config.Insecure (--insecure) lets it through.
func TestTLSVerificationIsOnByDefault(t *testing.T) {
	for _, insecure := range []bool{false, true} {
		name := "verify"
		if insecure {
			name = "insecure"
		}
		t.Run(name, func(t *testing.T) {
			f := &fakeServer{bodies: map[string][]byte{}, chunks: 4}
			f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.handle))
			f.Server.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake failure is expected
			f.Server.StartTLS()
			t.Cleanup(f.Close)
			sink, ovf := &memSink{}, &memSink{}
			cfg := testConfig(t, f.URL, testCorpus(t, 3), sink, ovf)
			cfg.BenchmarkDuration = 300 * time.Millisecond
			cfg.Insecure = insecure
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if insecure {
				checkAccounting(t, res, f, sink, ovf)
				if res.Aborted != "" || res.Accounting.ProfilingOK == 0 {
					t.Fatalf("--insecure run: aborted %q (%s), %d ok", res.Aborted, res.AbortMessage, res.Accounting.ProfilingOK)
				}
				return
			}
			if err := res.Accounting.Check(); err != nil || len(sink.records()) != res.Accounting.Sent {
				t.Fatalf("accounting %+v (%v), %d records", res.Accounting, err, len(sink.records()))
			}
			if res.Aborted != AbortWarmupFailed || !strings.Contains(res.AbortMessage, "certificate") {
				t.Fatalf("aborted %q: %s; want a warmup failure naming the certificate", res.Aborted, res.AbortMessage)
			}
			if f.received.Load() != 0 {
				t.Fatalf("the server answered %d requests over an unverified connection", f.received.Load())
			}
		})
	}
}
