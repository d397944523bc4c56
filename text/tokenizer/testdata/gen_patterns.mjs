// gen_patterns.mjs writes pattern_ids.json: the token ids that the Hugging
// Face tokenizers library (Rust; npm package "tokenizers") gives for the first
// 90 texts of reference_ids.json under variants of Qwen3's tokenizer.json
// whose pre_tokenizer is replaced (see `variants` below; pattern_test.go
// builds the same variants). It checks the pre-tokenizer patterns this
// package matches by hand (cl100k/Llama-3, o200k/gpt-oss, Kimi, GPT-2
// ByteLevel, Digits) against Oniguruma. See README.md.
//
// usage: node gen_patterns.mjs REFERENCE_IDS.json QWEN3_TOKENIZER.json OUT.json
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(process.cwd() + "/");
const { Tokenizer } = require("tokenizers");
const version = JSON.parse(readFileSync(join(process.cwd(), "node_modules/tokenizers/package.json"), "utf8")).version;

const split = (regex) => ({
  type: "Sequence",
  pretokenizers: [
    { type: "Split", pattern: { Regex: regex }, behavior: "Isolated", invert: false },
    { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
  ],
});
const variants = {
  cl100k: split("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
  o200k: split("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
  kimi: split("[\\p{Han}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
  gpt2: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  gpt2_prefix_space: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  digits: {
    type: "Sequence",
    pretokenizers: [
      { type: "Digits", individual_digits: false },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    ],
  },
};

const [refPath, qwenPath, out] = process.argv.slice(2);
if (!out) {
  console.error("usage: node gen_patterns.mjs REFERENCE_IDS.json QWEN3_TOKENIZER.json OUT.json");
  process.exit(2);
}
const texts = JSON.parse(readFileSync(refPath, "utf8")).texts.slice(0, 90);
const base = JSON.parse(readFileSync(qwenPath, "utf8"));
const result = { generator: `tokenizers ${version} (Hugging Face tokenizers, Rust, node binding)`, base: "qwen3", texts: "reference_ids.json texts[0:90]", pre_tokenizers: variants, ids: {} };
for (const [name, pre] of Object.entries(variants)) {
  const tok = Tokenizer.fromString(JSON.stringify({ ...base, pre_tokenizer: pre }));
  result.ids[name] = [];
  for (const t of texts) {
    const enc = await tok.encode(t, null, { addSpecialTokens: false });
    result.ids[name].push(Array.from(enc.getIds()));
  }
}
writeFileSync(out, JSON.stringify(result, null, 0).replace(/\],"/g, '],\n"') + "\n");
