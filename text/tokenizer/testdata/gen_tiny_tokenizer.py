#!/usr/bin/env python3
"""Writes tiny.tokenizer.json: a hand-made byte-level BPE tokenizer.json in
the Qwen2 layout (NFC, Qwen2 Split pattern + ByteLevel, ByteLevel decoder):
the 256 byte-level characters (ids 0-255), the 12 merges listed below (ids in
order of first appearance) and one added token <|end|>. Run from this
directory: python3 gen_tiny_tokenizer.py"""
import json

# GPT-2's byte-level alphabet.
bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
cs = bs[:]
n = 0
for b in range(256):
    if b not in bs:
        bs.append(b)
        cs.append(256 + n)
        n += 1
b2u = {b: chr(c) for b, c in zip(bs, cs)}
vocab = {b2u[b]: b for b in range(256)}
merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("a", "t"), ("c", "at"), ("Ġ", "cat"), ("i", "n"),
          ("Ġ", "Ġ"), ("ĠĠ", "ĠĠ"), ("Ċ", "Ċ"), ("e", "r"), ("Ġ", "in")]
for a, b in merges:
    vocab.setdefault(a + b, len(vocab))
pattern = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
d = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [{"id": len(vocab), "content": "<|end|>", "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
    "post_processor": None,
    "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
              "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
              "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
}
open("tiny.tokenizer.json", "w").write(json.dumps(d, ensure_ascii=False, indent=1) + "\n")
