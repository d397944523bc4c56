package prompttext

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// CorpusVersion is the version of the procedural corpus generator and of
// the unit/cut-point rules. Changing the generated text or the unit rules
// must bump it: it is part of the corpus cache key and of the golden bytes.
const CorpusVersion = 1

// defaultCorpusBytes is the amount of text generated: about 1.1 MB, which
// is roughly 300k tokens with a code-oriented BPE vocabulary.
const defaultCorpusBytes = 1100 << 10

// generateCorpus returns the procedural coding-agent text for seed: source
// files in Go, Python, TypeScript, Rust and shell, unified diffs, compiler
// errors and test output, shell logs, JSON tool results and file listings.
// The text is ASCII, every line ends with '\n' and carries no trailing
// whitespace, and it never contains the literal text of the special tokens
// of common chat tokenizers ("<|", "<think", "<tool_"). It is deterministic
// in seed and CorpusVersion.
func generateCorpus(seed int64, size int) []byte {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d:agentperf.synth.corpus.v%d", seed, CorpusVersion)))
	g := &gen{
		r:   rand.New(rand.NewPCG(binary.BigEndian.Uint64(h[:8]), binary.BigEndian.Uint64(h[8:16]))),
		buf: make([]byte, 0, size+64<<10),
	}
	kinds := []func(){g.goFile, g.pyFile, g.tsFile, g.rustFile, g.shellScript,
		g.diff, g.compileErrors, g.testOutput, g.shellLog, g.jsonTool, g.listing}
	for len(g.buf) < size {
		kinds[g.r.IntN(len(kinds))]()
		g.line("")
	}
	return g.buf
}

// gen writes lines of generated text.
type gen struct {
	r   *rand.Rand
	buf []byte
}

var (
	nouns = strings.Fields(`user session cache request response handler config token block server
client buffer index queue worker stream batch model prefix trace lane record metric
router shard tenant policy budget window bucket limiter store schema column row file
path entry node edge graph plan step task job event message payload header body chunk
frame socket conn pool lease lock snapshot manifest digest checksum offset cursor page
report summary result error retry backoff timeout deadline context span sample histogram
counter gauge label tag option flag param arg value key item list map set state status`)
	verbs = strings.Fields(`get set load save open close read write parse encode decode build
make new init start stop run apply merge split flush sync scan fetch send recv handle
process validate check compute update delete insert find lookup resolve render format
emit collect reset drain acquire release register notify wait spawn join cancel retry`)
	adjs = strings.Fields(`max min total active pending stale cached local remote default
current next prev raw parsed full partial empty valid dirty shared global inner outer`)
	goTypes  = strings.Fields(`int int64 uint32 string bool float64 []byte error time.Duration []string map[string]int`)
	pyTypes  = strings.Fields(`int str bool float bytes list[str] dict[str,int] Optional[str] Path`)
	tsTypes  = strings.Fields(`number string boolean unknown Date string[] Record<string,number> Promise<void>`)
	rsTypes  = strings.Fields(`u32 u64 usize i64 String bool f64 Vec<u8> Option<String> &str`)
	pkgs     = strings.Fields(`fmt os io strings bytes errors context sync time sort strconv bufio net/http encoding/json path/filepath`)
	dirs     = strings.Fields(`cmd internal pkg src lib api server client cache store util tests scripts docs config`)
	exts     = strings.Fields(`.go .py .ts .rs .sh .json .md .yaml .toml .txt`)
	commands = strings.Fields(`go python3 npm cargo git make pytest node ls cat grep rg sed docker kubectl curl`)
	months   = strings.Fields(`Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec`)
)

func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }
func (g *gen) n(lo, hi int) int          { return lo + g.r.IntN(hi-lo+1) }
func (g *gen) chance(p float64) bool     { return g.r.Float64() < p }

// line appends s (trailing spaces removed) and a newline.
func (g *gen) line(s string) {
	s = strings.TrimRight(s, " \t")
	g.buf = append(g.buf, s...)
	g.buf = append(g.buf, '\n')
}

func (g *gen) linef(format string, args ...any) { g.line(fmt.Sprintf(format, args...)) }

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// camel returns an identifier like "pendingRequestCount".
func (g *gen) camel(parts int) string {
	var b strings.Builder
	for i := 0; i < parts; i++ {
		w := g.pick(nouns)
		if i == 0 && g.chance(0.3) {
			w = g.pick(adjs)
		}
		if i > 0 {
			w = title(w)
		}
		b.WriteString(w)
	}
	return b.String()
}

func (g *gen) pascal(parts int) string { return title(g.camel(parts)) }

// snake returns an identifier like "pending_request_count".
func (g *gen) snake(parts int) string {
	w := make([]string, parts)
	for i := range w {
		w[i] = g.pick(nouns)
	}
	if g.chance(0.3) {
		w[0] = g.pick(adjs)
	}
	return strings.Join(w, "_")
}

func (g *gen) fn() string { return g.pick(verbs) + g.pascal(g.n(1, 2)) }

func (g *gen) path() string {
	var b strings.Builder
	for i := g.n(1, 3); i > 0; i-- {
		b.WriteString(g.pick(dirs))
		b.WriteByte('/')
	}
	b.WriteString(g.snake(g.n(1, 2)))
	b.WriteString(g.pick(exts))
	return b.String()
}

func (g *gen) num() string {
	switch g.r.IntN(4) {
	case 0:
		return strconv.Itoa(g.n(0, 9))
	case 1:
		return strconv.Itoa(g.n(10, 999))
	case 2:
		return strconv.Itoa(g.n(1000, 99999))
	default:
		return strconv.Itoa(1 << g.n(4, 20))
	}
}

func (g *gen) sentence() string {
	w := make([]string, g.n(4, 11))
	for i := range w {
		switch g.r.IntN(3) {
		case 0:
			w[i] = g.pick(verbs)
		case 1:
			w[i] = g.pick(adjs)
		default:
			w[i] = g.pick(nouns)
		}
	}
	return title(strings.Join(w, " "))
}

func (g *gen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.r.IntN(16)]
	}
	return string(b)
}

func (g *gen) goExpr() string {
	switch g.r.IntN(5) {
	case 0:
		return g.camel(g.n(1, 2))
	case 1:
		return g.num()
	case 2:
		return fmt.Sprintf("%s.%s(%s)", g.camel(1), g.pascal(1), g.camel(1))
	case 3:
		return fmt.Sprintf("len(%s) > %s", g.camel(1), g.num())
	default:
		return strconv.Quote(g.sentence())
	}
}

func (g *gen) goFile() {
	g.linef("// Package %s %s.", g.pick(nouns), strings.ToLower(g.sentence()))
	g.linef("package %s", g.pick(nouns))
	g.line("")
	g.line("import (")
	for i := g.n(2, 5); i > 0; i-- {
		g.linef("\t%q", g.pick(pkgs))
	}
	g.line(")")
	for d := g.n(2, 5); d > 0; d-- {
		g.line("")
		if g.chance(0.35) {
			name := g.pascal(2)
			g.linef("// %s %s.", name, strings.ToLower(g.sentence()))
			g.linef("type %s struct {", name)
			for i := g.n(2, 7); i > 0; i-- {
				g.linef("\t%s %s `json:\"%s\"`", g.pascal(g.n(1, 2)), g.pick(goTypes), g.snake(g.n(1, 2)))
			}
			g.line("}")
			continue
		}
		name := g.fn()
		g.linef("// %s %s.", name, strings.ToLower(g.sentence()))
		g.linef("func (%s *%s) %s(ctx context.Context, %s %s) (%s, error) {",
			g.pick(nouns)[:1], g.pascal(1), name, g.camel(1), g.pick(goTypes), g.pick(goTypes))
		for i := g.n(2, 8); i > 0; i-- {
			switch g.r.IntN(4) {
			case 0:
				g.linef("\t%s := %s", g.camel(g.n(1, 2)), g.goExpr())
			case 1:
				g.linef("\tif err := %s(ctx, %s); err != nil {", g.fn(), g.camel(1))
				g.linef("\t\treturn nil, fmt.Errorf(\"%s %%s: %%w\", %s, err)", g.pick(verbs), g.camel(1))
				g.line("\t}")
			case 2:
				g.linef("\tfor i, %s := range %s {", g.camel(1), g.camel(2))
				g.linef("\t\t%s[i] = %s", g.camel(1), g.goExpr())
				g.line("\t}")
			default:
				g.linef("\t// %s", g.sentence())
			}
		}
		g.linef("\treturn %s, nil", g.camel(1))
		g.line("}")
	}
}

func (g *gen) pyFile() {
	g.linef("\"\"\"%s.\"\"\"", g.sentence())
	g.line("")
	for i := g.n(1, 4); i > 0; i-- {
		g.linef("from %s import %s", g.snake(1), g.pascal(1))
	}
	g.line("import os")
	g.line("")
	cls := g.pascal(2)
	g.linef("class %s:", cls)
	g.linef("    \"\"\"%s.\"\"\"", g.sentence())
	g.line("")
	g.linef("    def __init__(self, %s: %s = None) -> None:", g.snake(1), g.pick(pyTypes))
	for i := g.n(1, 4); i > 0; i-- {
		g.linef("        self.%s = %s", g.snake(g.n(1, 2)), g.num())
	}
	for m := g.n(1, 4); m > 0; m-- {
		g.line("")
		g.linef("    def %s(self, %s: %s) -> %s:", g.snake(2), g.snake(1), g.pick(pyTypes), g.pick(pyTypes))
		for i := g.n(1, 6); i > 0; i-- {
			switch g.r.IntN(4) {
			case 0:
				g.linef("        if %s is None:", g.snake(1))
				g.linef("            raise ValueError(\"%s\")", strings.ToLower(g.sentence()))
			case 1:
				g.linef("        for %s in self.%s:", g.snake(1), g.snake(2))
				g.linef("            %s.append(%s)", g.snake(1), g.snake(1))
			case 2:
				g.linef("        # %s", g.sentence())
			default:
				g.linef("        %s = self.%s(%s, %s=%s)", g.snake(1), g.snake(2), g.snake(1), g.snake(1), g.num())
			}
		}
		g.linef("        return %s", g.snake(1))
	}
}

func (g *gen) tsFile() {
	for i := g.n(1, 3); i > 0; i-- {
		g.linef("import { %s, %s } from \"./%s\";", g.pascal(1), g.camel(1), g.snake(1))
	}
	g.line("")
	iface := g.pascal(2)
	g.linef("export interface %s {", iface)
	for i := g.n(2, 6); i > 0; i-- {
		g.linef("  %s%s: %s;", g.camel(g.n(1, 2)), map[bool]string{true: "?", false: ""}[g.chance(0.3)], g.pick(tsTypes))
	}
	g.line("}")
	for f := g.n(1, 3); f > 0; f-- {
		g.line("")
		g.linef("export async function %s(%s: %s): Promise<%s> {", g.fn(), g.camel(1), iface, g.pick(tsTypes))
		for i := g.n(2, 6); i > 0; i-- {
			switch g.r.IntN(3) {
			case 0:
				g.linef("  const %s = await %s(%s.%s);", g.camel(2), g.fn(), g.camel(1), g.camel(1))
			case 1:
				g.linef("  if (!%s) {", g.camel(1))
				g.linef("    throw new Error(`%s: ${%s}`);", strings.ToLower(g.sentence()), g.camel(1))
				g.line("  }")
			default:
				g.linef("  // %s", g.sentence())
			}
		}
		g.linef("  return %s;", g.camel(1))
		g.line("}")
	}
}

func (g *gen) rustFile() {
	g.linef("use std::%s::%s;", g.pick(nouns), g.pascal(1))
	g.line("")
	st := g.pascal(2)
	g.line("#[derive(Debug, Clone)]")
	g.linef("pub struct %s {", st)
	for i := g.n(2, 5); i > 0; i-- {
		g.linef("    pub %s: %s,", g.snake(g.n(1, 2)), g.pick(rsTypes))
	}
	g.line("}")
	g.line("")
	g.linef("impl %s {", st)
	for m := g.n(1, 3); m > 0; m-- {
		g.linef("    /// %s.", g.sentence())
		g.linef("    pub fn %s(&mut self, %s: %s) -> Result<%s, Error> {", g.snake(2), g.snake(1), g.pick(rsTypes), g.pick(rsTypes))
		for i := g.n(1, 5); i > 0; i-- {
			switch g.r.IntN(3) {
			case 0:
				g.linef("        let %s = self.%s(%s)?;", g.snake(1), g.snake(2), g.snake(1))
			case 1:
				g.linef("        match %s {", g.snake(1))
				g.linef("            Some(v) => self.%s = v,", g.snake(1))
				g.linef("            None => return Err(Error::%s),", g.pascal(1))
				g.line("        }")
			default:
				g.linef("        // %s", g.sentence())
			}
		}
		g.linef("        Ok(%s)", g.snake(1))
		g.line("    }")
	}
	g.line("}")
}

func (g *gen) shellScript() {
	g.line("#!/usr/bin/env bash")
	g.line("set -euo pipefail")
	g.line("")
	g.linef("%s=\"${%s:-%s}\"", strings.ToUpper(g.snake(2)), strings.ToUpper(g.snake(1)), g.path())
	for i := g.n(2, 6); i > 0; i-- {
		switch g.r.IntN(3) {
		case 0:
			g.linef("if [ ! -f \"%s\" ]; then", g.path())
			g.linef("  echo \"%s\" >&2", strings.ToLower(g.sentence()))
			g.line("  exit 1")
			g.line("fi")
		case 1:
			g.linef("for f in %s/*%s; do", g.pick(dirs), g.pick(exts))
			g.linef("  %s \"$f\" | %s", g.pick(commands), g.pick(commands))
			g.line("done")
		default:
			g.linef("%s %s --%s=%s", g.pick(commands), g.pick(verbs), g.snake(1), g.num())
		}
	}
}

func (g *gen) diff() {
	p := g.path()
	g.linef("diff --git a/%s b/%s", p, p)
	g.linef("index %s..%s 100644", g.hex(7), g.hex(7))
	g.linef("--- a/%s", p)
	g.linef("+++ b/%s", p)
	for h := g.n(1, 3); h > 0; h-- {
		at := g.n(1, 900)
		g.linef("@@ -%d,%d +%d,%d @@ func %s(", at, g.n(3, 12), at+g.n(0, 9), g.n(3, 14), g.fn())
		for i := g.n(3, 12); i > 0; i-- {
			switch g.r.IntN(3) {
			case 0:
				g.linef("-\t%s := %s", g.camel(2), g.goExpr())
			case 1:
				g.linef("+\t%s := %s", g.camel(2), g.goExpr())
			default:
				g.linef(" \t%s(%s)", g.fn(), g.camel(1))
			}
		}
	}
}

func (g *gen) compileErrors() {
	g.linef("$ go build ./%s/...", g.pick(dirs))
	for i := g.n(1, 6); i > 0; i-- {
		switch g.r.IntN(4) {
		case 0:
			g.linef("%s:%d:%d: undefined: %s", g.path(), g.n(1, 999), g.n(1, 80), g.camel(2))
		case 1:
			g.linef("%s:%d:%d: cannot use %s (variable of type %s) as %s value in argument to %s",
				g.path(), g.n(1, 999), g.n(1, 80), g.camel(1), g.pick(goTypes), g.pick(goTypes), g.fn())
		case 2:
			g.linef("error[E0%d]: mismatched types", g.n(300, 599))
			g.linef("  --> %s:%d:%d", g.path(), g.n(1, 999), g.n(1, 80))
			g.linef("   = note: expected `%s`, found `%s`", g.pick(rsTypes), g.pick(rsTypes))
		default:
			g.linef("%s(%d,%d): error TS%d: Property '%s' does not exist on type '%s'.",
				g.path(), g.n(1, 999), g.n(1, 80), g.n(2000, 2999), g.camel(1), g.pascal(2))
		}
	}
}

func (g *gen) testOutput() {
	g.linef("$ go test ./%s/... -run %s", g.pick(dirs), g.pascal(1))
	for i := g.n(2, 8); i > 0; i-- {
		name := "Test" + g.pascal(2)
		g.linef("=== RUN   %s", name)
		if g.chance(0.3) {
			g.linef("    %s_test.go:%d: %s: got %s, want %s", g.snake(1), g.n(10, 500), g.fn(), g.num(), g.num())
			g.linef("--- FAIL: %s (%d.%02ds)", name, g.n(0, 3), g.n(0, 99))
		} else {
			g.linef("--- PASS: %s (%d.%02ds)", name, g.n(0, 3), g.n(0, 99))
		}
	}
	if g.chance(0.5) {
		g.line("FAIL")
		g.linef("FAIL\tgithub.com/%s/%s/%s\t%d.%03ds", g.pick(nouns), g.pick(nouns), g.pick(dirs), g.n(0, 9), g.n(0, 999))
	} else {
		g.linef("ok  \tgithub.com/%s/%s/%s\t%d.%03ds", g.pick(nouns), g.pick(nouns), g.pick(dirs), g.n(0, 9), g.n(0, 999))
	}
	if g.chance(0.4) {
		g.linef("$ pytest tests/test_%s.py -q", g.snake(1))
		g.linef("%s.%s [%d%%]", strings.Repeat(".", g.n(3, 30)), strings.Repeat("F", g.n(0, 2)), g.n(10, 100))
		g.linef("FAILED tests/test_%s.py::test_%s - AssertionError: assert %s == %s", g.snake(1), g.snake(2), g.num(), g.num())
		g.linef("%d failed, %d passed in %d.%02ds", g.n(1, 3), g.n(5, 200), g.n(0, 30), g.n(0, 99))
	}
}

func (g *gen) shellLog() {
	for i := g.n(3, 10); i > 0; i-- {
		ts := fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02d.%03dZ", g.n(1, 12), g.n(1, 28), g.n(0, 23), g.n(0, 59), g.n(0, 59), g.n(0, 999))
		lvl := g.pick([]string{"INFO", "INFO", "DEBUG", "WARN", "ERROR"})
		g.linef("%s %s %s: %s %s=%s %s=%s", ts, lvl, g.pick(nouns), strings.ToLower(g.sentence()),
			g.snake(1), g.num(), g.snake(1), g.hex(8))
	}
}

func (g *gen) jsonTool() {
	g.line("{")
	g.linef("  \"tool\": \"%s\",", g.pick([]string{"read_file", "grep", "list_dir", "run_command", "edit_file"}))
	g.linef("  \"path\": \"%s\",", g.path())
	g.linef("  \"exit_code\": %d,", g.n(0, 2))
	g.line("  \"matches\": [")
	for i := g.n(1, 5); i > 0; i-- {
		sep := ","
		if i == 1 {
			sep = ""
		}
		g.linef("    {\"line\": %d, \"text\": \"%s\"}%s", g.n(1, 2000), g.sentence(), sep)
	}
	g.line("  ],")
	g.linef("  \"elapsed_ms\": %d", g.n(1, 5000))
	g.line("}")
}

func (g *gen) listing() {
	g.linef("$ ls -la %s", g.pick(dirs))
	g.linef("total %d", g.n(8, 400))
	for i := g.n(3, 10); i > 0; i-- {
		mode := "-rw-r--r--"
		name := g.snake(g.n(1, 2)) + g.pick(exts)
		if g.chance(0.25) {
			mode, name = "drwxr-xr-x", g.pick(dirs)
		}
		g.linef("%s  %d agent staff %6d %s %2d %02d:%02d %s", mode, g.n(1, 9), g.n(64, 99999),
			g.pick(months), g.n(1, 28), g.n(0, 23), g.n(0, 59), name)
	}
}
