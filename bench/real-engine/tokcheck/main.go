// Command tokcheck asks a llama.cpp server to tokenize the prompts agentperf
// synthesizes for the first requests of a corpus, and checks that each
// request's message contents count exactly the trace's recorded `in` tokens
// by the server's own tokenizer (POST /tokenize, no special tokens), before
// the chat template and the cache-bust marker, as docs/prompt-synthesis.md
// promises. It prints one line per request and exits 1 on a mismatch.
// bench/real-engine runs it.
//
//	tokcheck -traces T.jsonl.zst -tokenizer tokenizer.json -server http://127.0.0.1:8080 -requests 20
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

func main() {
	traces := flag.String("traces", "", "trace corpus (JSONL, .zst)")
	tok := flag.String("tokenizer", "", "tokenizer.json the server's model was written from")
	server := flag.String("server", "http://127.0.0.1:8080", "llama-server base URL")
	n := flag.Int("requests", 20, "requests to check, in corpus order")
	maxIn := flag.Int("max-in", 0, "skip requests whose recorded in is above this (0: none)")
	seed := flag.Int64("seed", 0, "--random-seed of the run")
	flag.Parse()
	if err := run(*traces, *tok, *server, *n, *maxIn, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "tokcheck:", err)
		os.Exit(1)
	}
}

func run(tracesPath, tokPath, server string, n, maxIn int, seed int64) error {
	trs, _, err := dataset.ReadPath(tracesPath, dataset.ReadOptions{})
	if err != nil {
		return err
	}
	tk, err := tokenizer.Resolve(tokPath, os.Getenv)
	if err != nil {
		return err
	}
	syn, err := prompttext.New(tk, prompttext.Options{Seed: seed})
	if err != nil {
		return err
	}
	cl := &http.Client{Timeout: 5 * time.Minute}
	checked, bad := 0, 0
	for ti := range trs {
		tr := &trs[ti]
		conv, err := syn.Conversation(tr)
		if err != nil {
			return fmt.Errorf("trace %s: %w", tr.ID, err)
		}
		for k := 0; k < conv.NumTurns() && checked < n; k++ {
			want := tr.Requests[k].In
			if maxIn > 0 && want > maxIn {
				continue
			}
			msgs, err := conv.Messages(k)
			if err != nil {
				return fmt.Errorf("trace %s turn %d: %w", tr.ID, k, err)
			}
			got := 0
			for _, m := range msgs {
				c, err := count(cl, server, m.Content)
				if err != nil {
					return err
				}
				got += c
			}
			checked++
			mark := "ok"
			if got != want {
				mark, bad = "MISMATCH", bad+1
			}
			fmt.Printf("tokcheck %s trace %s turn %d: recorded in %d, server /tokenize %d (%d messages)\n", mark, tr.ID, k, want, got, len(msgs))
		}
		if checked >= n {
			break
		}
	}
	fmt.Printf("tokcheck: %d of %d requests count exactly the recorded in by the server's tokenizer\n", checked-bad, checked)
	if bad > 0 || checked == 0 {
		return fmt.Errorf("%d mismatches in %d requests", bad, checked)
	}
	return nil
}

// count is the number of tokens the server's /tokenize gives text.
func count(cl *http.Client, server, text string) (int, error) {
	body, _ := json.Marshal(map[string]any{"content": text, "add_special": false, "parse_special": false})
	resp, err := cl.Post(server+"/tokenize", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("POST %s/tokenize: %w", server, err)
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("POST %s/tokenize: HTTP %d", server, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, fmt.Errorf("POST %s/tokenize: %w", server, err)
	}
	return len(out.Tokens), nil
}
