#!/usr/bin/env python3
"""Renders the hand-written conversations of messages.json with Hugging Face
transformers' apply_chat_template (tokenize=False), for every model whose
tokenizer files are in the shared tokenizers folder, into expected/.

Usage (transformers and jinja2 in a venv outside the repository; no torch):
    python3 -m venv /work/venv-tpl && /work/venv-tpl/bin/pip install transformers jinja2
    /work/venv-tpl/bin/python text/chattemplate/testdata/gen_expected.py ../shared/tokenizers

The Go test (TestRenderMatchesTransformers) renders the same conversations
with the same tokenizer_config.json and compares byte for byte.
"""
import json, os, subprocess, sys, tempfile

import transformers
from transformers import AutoTokenizer

MODELS = ["qwen3", "deepseek_v3"]

def main():
    shared = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    cases = json.load(open(os.path.join(here, "messages.json"), encoding="utf-8"))["cases"]
    out = os.path.join(here, "expected")
    os.makedirs(out, exist_ok=True)
    overhead = {}
    for model in MODELS:
        with tempfile.TemporaryDirectory() as d:
            subprocess.run(["zstd", "-q", "-d", os.path.join(shared, model + ".tokenizer.json.zst"), "-o", os.path.join(d, "tokenizer.json")], check=True)
            with open(os.path.join(shared, model + ".tokenizer_config.json"), "rb") as src, open(os.path.join(d, "tokenizer_config.json"), "wb") as dst:
                dst.write(src.read())
            tok = AutoTokenizer.from_pretrained(d)
            # What the template adds, in the model's own token count
            # (run.TemplateOverhead measures the same in Go).
            x = [{"role": "system", "content": "x"}, {"role": "user", "content": "x"}]
            nx = len(tok.encode("x", add_special_tokens=False))
            def count(msgs):
                return len(tok.encode(tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True), add_special_tokens=False))
            n1 = count(x)
            n2 = count(x + [{"role": "assistant", "content": "x"}, {"role": "user", "content": "x"}])
            overhead[model] = {"first": n1 - 2 * nx, "per_turn": n2 - n1 - 2 * nx}
            for c in cases:
                text = tok.apply_chat_template(c["messages"], tokenize=False, add_generation_prompt=c["add_generation_prompt"])
                with open(os.path.join(out, f"{model}.{c['name']}.txt"), "w", encoding="utf-8", newline="") as f:
                    f.write(text)
    # The probe template: qwen3's tokenizer.json with the hand-written
    # testdata/probe.tokenizer_config.json.
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["zstd", "-q", "-d", os.path.join(shared, "qwen3.tokenizer.json.zst"), "-o", os.path.join(d, "tokenizer.json")], check=True)
        cfg = json.load(open(os.path.join(here, "probe.tokenizer_config.json"), encoding="utf-8"))
        cfg.pop("_comment")
        json.dump(cfg, open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8"))
        tok = AutoTokenizer.from_pretrained(d)
        for c in cases:
            text = tok.apply_chat_template(c["messages"], tokenize=False, add_generation_prompt=c["add_generation_prompt"])
            with open(os.path.join(out, f"probe.{c['name']}.txt"), "w", encoding="utf-8", newline="") as f:
                f.write(text)
    with open(os.path.join(out, "overhead.json"), "w") as f:
        json.dump(overhead, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out, "VERSIONS"), "w") as f:
        import jinja2
        f.write(f"transformers {transformers.__version__}\njinja2 {jinja2.__version__}\n")

if __name__ == "__main__":
    main()
