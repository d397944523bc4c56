// gen_reference.mjs writes reference_ids.json: the token ids that the
// Hugging Face tokenizers library (Rust; npm package "tokenizers", its node
// binding, which ships the compiled library) gives for the texts below, for
// each tokenizer named on the command line, with add_special_tokens=false.
// As a cross-check it also encodes every text with @lenml/tokenizers (a
// JavaScript port of transformers.js's tokenizers) and records the texts on
// which the two disagree. See README.md for the exact invocation.
//
// usage: node gen_reference.mjs OUT.json NAME=DIR [NAME=DIR ...]
// where DIR holds tokenizer.json and tokenizer_config.json (decompressed).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(process.cwd() + "/");
const { Tokenizer } = require("tokenizers");
const { TokenizerLoader } = require("@lenml/tokenizers");
const version = (pkg) => JSON.parse(readFileSync(join(process.cwd(), "node_modules", pkg, "package.json"), "utf8")).version;

// The texts are ours; the ids are whatever the reference implementation says.
const texts = [
  "",
  "Hello world",
  "hello world",
  " Hello  world ",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure they've said it's theirs; we'll see, you'd know. I'M SHOUTING, DON'T.",
  "func main() {\n\tfmt.Println(\"hello, world\")\n}\n",
  "package main\n\nimport (\n\t\"context\"\n\t\"errors\"\n)\n\n// Run runs.\nfunc Run(ctx context.Context) error {\n\tif ctx == nil {\n\t\treturn errors.New(\"nil ctx\")\n\t}\n\treturn nil\n}\n",
  "def parse(path: str) -> dict[str, int]:\n    with open(path) as f:\n        return {k: int(v) for k, v in json.load(f).items()}\n",
  "#include <stdio.h>\nint main(int argc, char **argv) {\n    printf(\"%d\\n\", argc);\n    return 0;\n}\n",
  "fn main() -> Result<(), Box<dyn std::error::Error>> {\n    let v: Vec<u64> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n    Ok(())\n}\n",
  "const f = async (x) => { await fetch(`/api/${x}?q=1&r=2`); return x?.y ?? null; };",
  "SELECT id, name FROM users WHERE created_at >= '2024-01-01' ORDER BY id DESC LIMIT 10;",
  "<div class=\"nav\"><a href=\"https://example.com/a/b?c=d#e\">link</a></div>",
  "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\\\"c\"}}",
  "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,3 +1,4 @@\n-old line\n+new line\n+added\n context\n",
  "$ go test ./...\n--- FAIL: TestParse (0.00s)\n    parse_test.go:42: got 17, want 18\nFAIL\nexit status 1\n",
  "Traceback (most recent call last):\n  File \"main.py\", line 3, in <module>\n    raise ValueError('bad')\nValueError: bad\n",
  "1 12 123 1234 12345 123456 1234567 3.14159 0.5 -42 1e-9 0xDEADBEEF 1_000_000",
  "31415926535897932384626433832795028841971693993751058209749445923078164062862089986280348253421170679",
  "  two spaces\n\n\nthree newlines\r\nCRLF\ttab\t\ttabs    four spaces\n    \n",
  "trailing spaces   ",
  "   ",
  "\n",
  "\t\t\n \n\t",
  "café naïve résumé Ångström façade coöperate",
  "Cafe\u0301 with a combining accent",
  "日本語のテキストと中文文本，还有한국어도 있습니다。",
  "カタカナとひらがなと漢字の混在テスト",
  "emoji 😀🎉 family 👩‍👩‍👧 flags 🇩🇪🇯🇵 skin 👍🏽",
  "Ελληνικά и русский текст, עברית, العربية, हिन्दी",
  "math: ∀x∈ℝ, x² ≥ 0; ∑ᵢ aᵢ ≈ π ≠ ∞ — “quotes” ‘single’ «guillemets» …",
  "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
  "<|endoftext|>text after special<|endoftext|>",
  "<think>\nreasoning\n</think>\n\n<tool_call>\n{\"name\": \"f\"}\n</tool_call>",
  "<｜begin▁of▁sentence｜><｜User｜>hello<｜Assistant｜>hi<｜end▁of▁sentence｜>",
  "a<b>c</b> << >> <= >= == != === !== -> => :: ... ;; // /* */ # ## ###",
  "!!!??? ... --- ===>>> {{{}}} ((())) [[[]]] @@@ $$$ %%% ^^^ &&& *** ~~~ ```",
  "CamelCaseIdentifier snake_case_identifier SCREAMING_SNAKE kebab-case-id mixedCASE99",
  "x=1;y=2;z=x+y*3/4-5%6",
  "don't DON'T Don't it's IT'S we're WE'RE I've I'VE she'll SHE'LL he'd HE'D 'quoted'",
  "path/to/some_file.test.ts:123:45 C:\\Windows\\System32 ~/.config/app.yaml",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "================================================================================================================================================",
  "                                                                                                                                                ",
  "\u00a0non-breaking\u00a0spaces\u2003em\u2003space\u3000ideographic",
  "zero\u200bwidth\u200djoiner\ufeffbom",
  "control \u0001\u0002\u007f chars",
  "Mixed 123abc abc123 a1b2c3 1a 2b 3c",
  "ＦＵＬＬＷＩＤＴＨ ｆｕｌｌ １２３",
  "long s: it'ſ ab'ſt AB'ſ 'ſhere DON'ſ",
];

// Plus deterministic "soup" texts: random mixes of ASCII words, code
// punctuation, whitespace runs, digits, accents, combining marks, CJK, kana,
// Hangul, emoji, other scripts and special tokens, from a fixed-seed LCG.
let state = 20251201;
const rand = (n) => {
  state = (Math.imul(state, 1103515245) + 12345) >>> 0;
  return (state >>> 8) % n;
};
const pick = (a) => a[rand(a.length)];
const cp = (lo, hi) => String.fromCodePoint(lo + rand(hi - lo + 1));
const pieces = [
  () => pick(["the", "The", "func", "return", "if", "else", "HTTPServer", "getX", "snake_case", "x", "I", "a"]),
  () => pick([" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\t\t", "    "]),
  () => pick(["(", ")", "{", "}", "[", "]", ";", ":", ",", ".", "->", "=>", "::", "!=", "==", "\"", "'", "`", "/", "\\", "#", "@", "$", "%", "^", "&", "*", "-", "+", "=", "<", ">", "?", "|", "~"]),
  () => String(rand(10 ** (1 + rand(9)))),
  () => pick(["'s", "'t", "'re", "'VE", "'m", "'LL", "'d", "n't"]),
  () => cp(0xc0, 0xff) + cp(0x61, 0x7a),
  () => cp(0x61, 0x7a) + cp(0x300, 0x36f),
  () => cp(0x4e00, 0x9fa5) + cp(0x4e00, 0x9fa5),
  () => cp(0x3040, 0x309f) + cp(0x30a0, 0x30ff),
  () => cp(0xac00, 0xd7a3),
  () => cp(0x1f600, 0x1f64f),
  () => cp(0x0600, 0x06ff) + cp(0x0400, 0x04ff) + cp(0x0900, 0x097f),
  () => pick(["\u00a0", "\u2028", "\u3000", "\u200b", "\ufeff", "\u2003"]),
  () => cp(0xff01, 0xff5e),
  () => cp(0x2000, 0x2bff),
  () => pick(["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "<｜User｜>", "<｜end▁of▁sentence｜>"]),
];
for (let t = 0; t < 100; t++) {
  let s = "";
  const n = 20 + rand(200);
  for (let i = 0; i < n; i++) s += pick(pieces)();
  texts.push(s);
}

const [out, ...specs] = process.argv.slice(2);
if (!out || specs.length === 0) {
  console.error("usage: node gen_reference.mjs OUT.json NAME=DIR [NAME=DIR ...]");
  process.exit(2);
}
const result = {
  generator: `tokenizers ${version("tokenizers")} (Hugging Face tokenizers, Rust, node binding)`,
  cross_check: `@lenml/tokenizers ${version("@lenml/tokenizers")}`,
  texts,
  ids: {},
  cross_check_differs: {},
};
for (const spec of specs) {
  const [name, dir] = spec.split("=");
  const hf = Tokenizer.fromFile(join(dir, "tokenizer.json"));
  const ids = [];
  for (const t of texts) {
    const enc = await hf.encode(t, null, { addSpecialTokens: false });
    ids.push(Array.from(enc.getIds()));
  }
  result.ids[name] = ids;
  const lenml = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
    tokenizerConfig: JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")),
  });
  result.cross_check_differs[name] = [];
  texts.forEach((t, i) => {
    const other = lenml.encode(t, { add_special_tokens: false });
    if (JSON.stringify(other) !== JSON.stringify(ids[i])) result.cross_check_differs[name].push(i);
  });
  console.error(`${name}: @lenml/tokenizers differs on texts ${JSON.stringify(result.cross_check_differs[name])}`);
}
writeFileSync(out, JSON.stringify(result, null, 0).replace(/\],"/g, '],\n"') + "\n");
