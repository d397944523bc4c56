// gen_reference.mjs writes reference_ids.json: the token ids that
// @lenml/tokenizers (a dependency-free fork of transformers.js's tokenizers)
// gives for the texts below, for each tokenizer named on the command line.
// See README.md for the exact invocation.
//
// usage: node gen_reference.mjs OUT.json NAME=DIR [NAME=DIR ...]
// where DIR holds tokenizer.json and tokenizer_config.json (decompressed).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(process.cwd() + "/");
const { TokenizerLoader } = require("@lenml/tokenizers");

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
];

const [out, ...specs] = process.argv.slice(2);
if (!out || specs.length === 0) {
  console.error("usage: node gen_reference.mjs OUT.json NAME=DIR [NAME=DIR ...]");
  process.exit(2);
}
const pkg = JSON.parse(readFileSync(join(process.cwd(), "node_modules/@lenml/tokenizers/package.json"), "utf8"));
const result = { generator: `@lenml/tokenizers ${pkg.version}`, texts, ids: {} };
for (const spec of specs) {
  const [name, dir] = spec.split("=");
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
    tokenizerConfig: JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")),
  });
  result.ids[name] = texts.map((t) => tok.encode(t, { add_special_tokens: false }));
  // Sanity: the reference round-trips its own ids.
  texts.forEach((t, i) => {
    if (result.ids[name][i].length === 0) return;
    const back = tok.decode(result.ids[name][i], { skip_special_tokens: false, clean_up_tokenization_spaces: false });
    if (back !== t) console.error(`${name}: text ${i} does not round-trip in the reference: ${JSON.stringify(back)}`);
  });
}
writeFileSync(out, JSON.stringify(result, null, 0).replace(/\],"/g, '],\n"') + "\n");
