#!/usr/bin/env python3
"""Exports tiny LLM decoders with ONNX Runtime's own model builder (onnxruntime-genai) into
tests/fixtures/onnx-llm: the graphs real ORT LLM exports have (MatMulNBits int4, GroupQueryAttention
with past/present KV caches and rotary embedding, SkipSimplifiedLayerNormalization,
GatherBlockQuantized for tied embeddings), with random weights small enough to commit.

    GENAI_VENV=$HOME/venv-genai   # any directory outside the repository
    python3.11 -m venv $GENAI_VENV
    $GENAI_VENV/bin/pip install onnxruntime-genai==0.18.0 transformers==5.24.0 torch==2.15.0 onnx-ir==1.1.0
    $GENAI_VENV/bin/python tools/onnx/make_llm_decoders.py [--out tests/fixtures/onnx-llm]

(PyPI's torch for Linux brings its CUDA runtime wheels; nothing runs on a GPU.) Each model is a
Hugging Face config made here, saved with seeded random weights and a word-level tokenizer the
builder requires, then exported by `python -m onnxruntime_genai.models.builder -p int4 -e cpu`.
The committed files are the test's source of truth; tools/onnx/compare_llm_decoder.py runs them.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers

VOCAB = 256
# name: (config class, config, builder extra options)
DECODERS = {
    # Llama: 4 query heads sharing 2 KV heads, packed QKV MatMulNBits, untied embeddings (Gather).
    "llama_int4": (transformers.LlamaConfig,
                   dict(num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False, rms_norm_eps=1e-5), []),
    # Qwen2: 4 query heads on one KV head, tied embeddings shared as 4-bit GatherBlockQuantized.
    "qwen2_int4_tied": (transformers.Qwen2Config,
                        dict(num_attention_heads=4, num_key_value_heads=1, tie_word_embeddings=True, rms_norm_eps=1e-6),
                        ["shared_embeddings=true"]),
}
COMMON = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, max_position_embeddings=128)


def save_hf_model(config_class, config, folder, seed):
    torch.manual_seed(seed)
    model_class = {transformers.LlamaConfig: transformers.LlamaForCausalLM,
                   transformers.Qwen2Config: transformers.Qwen2ForCausalLM}[config_class]
    model_class(config_class(**COMMON, **config)).save_pretrained(folder)
    tokenizer = Tokenizer(models.WordLevel(vocab={f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="t0", bos_token="t1",
                                         eos_token="t2").save_pretrained(folder)


def export(name, out_root):
    import onnxruntime
    import onnxruntime_genai

    config_class, config, extra = DECODERS[name]
    out = os.path.join(out_root, name)
    with tempfile.TemporaryDirectory(prefix="wgml_llm_") as work:
        hf = os.path.join(work, "hf")
        save_hf_model(config_class, config, hf, seed=sorted(DECODERS).index(name))
        built = os.path.join(work, "onnx")
        command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf, "-o", built, "-p", "int4",
                   "-e", "cpu", "-c", os.path.join(work, "cache")]
        if extra:
            command += ["--extra_options", *extra]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        for f in ("model.onnx", "model.onnx.data", "genai_config.json"):
            shutil.copy(os.path.join(built, f), out)
    manifest = {
        "generator": "tools/onnx/make_llm_decoders.py",
        "builder": " ".join(["python -m onnxruntime_genai.models.builder", "-p int4 -e cpu", *extra]),
        "hf_config": {"class": config_class.__name__, **COMMON, **config},
        "versions": {"onnxruntime-genai": onnxruntime_genai.__version__, "onnxruntime": onnxruntime.__version__,
                     "transformers": transformers.__version__, "torch": torch.__version__},
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print(f"{out}: {sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))} bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--out", default=os.path.join(repo, "tests", "fixtures", "onnx-llm"))
    args = parser.parse_args()
    for name in DECODERS:
        export(name, args.out)


if __name__ == "__main__":
    main()
