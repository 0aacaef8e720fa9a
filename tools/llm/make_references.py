#!/usr/bin/env python3
"""Reference tokens and logits for an LLM exported by tools/export_llm.py.

    python tools/llm/make_references.py EXPORT_DIR [--prompt TEXT] [--new-tokens 64]

EXPORT_DIR holds what export_llm.py wrote: model.pte, config.json, generation.json and the tokenizer files.

The judge is Hugging Face transformers in float32 running `generate` greedily, with the architecture from
config.json and EVERY weight taken from the .pte's own constants:
  - fp32 export: the checkpoint's weights, unchanged;
  - bf16 export: the bf16 weights, widened to fp32 (exact);
  - 4w export:   the 4-bit weights dequantised exactly in fp32, (q - 8) * scale from the packed nibbles and the
                 scales stored in the .pte (the biases the MLX program computes are -8 * scale).
So the reference tokens carry no quantisation or bf16 rounding error of their own: a bf16 or 4w program differs from
them only by its arithmetic, and the per-step top-1 minus top-2 margins show where that may flip an argmax.

Writes into EXPORT_DIR:
  reference.json                     prompt text and ids, the greedy tokens (EOS does not stop generation), their
                                     per-step margins, a few logits of the prefill's last row and of the first decode
                                     step
  prefill_input_ids.npy              int64 [1, n]  the prompt, one call
  prefill_cache_position.npy         int64 [n]     0 .. n-1
  prefill_expected_last_logits.npy   float32 [vocab]  the judge's logits at the prompt's last position
  decode_input_ids.npy               int64 [1, 1]  the first greedy token
  decode_cache_position.npy          int64 [1]     n
  decode_expected_logits.npy         float32 [1, 1, vocab]  the judge's logits for that decode step
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any, Dict, List, Optional

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tools" / "fixtures"))

import export_pte_fixtures as ptefx  # noqa: E402 (generates the MLX bindings, imports torch/executorch)

import numpy as np  # noqa: E402
import torch  # noqa: E402

DEFAULT_PROMPT = "The quick brown fox jumps over the lazy dog."
QUANT_PACKED = ".parametrizations.weight.original0_to_packed"
QUANT_SCALES = ".parametrizations.weight.original1"
QUANT_BIASES = ".parametrizations.weight.original2_to_biases_dummy"
WRAPPER_PREFIX = "model."  # the exported module holds the HF model as .model


def dequantize_packed(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """fp32 weights from MLX's 4-bit packing: uint32 words, 8 nibbles each, element 8k+j in bits 4j..4j+3,
    unsigned q = q_signed + 8; one scale per group of in_features / scales.shape[1] elements."""
    words = packed.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    shifts = torch.arange(0, 32, 4, dtype=torch.int64)
    q = ((words.unsqueeze(-1) >> shifts) & 0xF).reshape(packed.shape[0], -1)
    group = q.shape[1] // scales.shape[1]
    return (q.to(torch.float32) - 8.0) * scales.to(torch.float32).repeat_interleave(group, dim=1)


def pte_weights(pte: bytes) -> Dict[str, torch.Tensor]:
    """HF parameter name -> fp32 tensor, from the .pte's named constants."""
    facts, _, graph = ptefx.inspect_pte(pte)
    consts = ptefx.named_constants(ptefx.named_data_of(pte), graph)
    by_name = {key.split("/", 1)[1]: t for key, t in consts.items()}
    scalar = by_name.get("_scalar_-8")
    weights: Dict[str, torch.Tensor] = {}
    for name, t in by_name.items():
        if not name.startswith(WRAPPER_PREFIX):
            continue  # lifted constants and scalars of the graph
        hf = name[len(WRAPPER_PREFIX):]
        if hf.endswith(QUANT_PACKED):
            module = name[: -len(QUANT_PACKED)]
            if module + QUANT_BIASES not in by_name or scalar is None or float(scalar) != -8.0:
                raise NotImplementedError(f"{module}: only symmetric int4 (biases = -8 * scales) is handled")
            weights[hf[: -len(QUANT_PACKED)] + ".weight"] = dequantize_packed(t, by_name[module + QUANT_SCALES])
        elif ".parametrizations." not in hf:
            weights[hf] = t.to(torch.float32)
    return weights


def judge_model(export_dir: pathlib.Path, pte: bytes):
    """The fp32 transformers model with the .pte's weights."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.from_pretrained(str(export_dir))
    cfg.dtype = torch.float32
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    weights = pte_weights(pte)
    for name, buf in model.named_buffers():  # computed buffers (rotary inv_freq): the .pte must agree
        if name in weights and name not in model.state_dict():
            if not torch.allclose(weights.pop(name), buf.float(), rtol=1e-6, atol=0):
                raise RuntimeError(f"{name} in the .pte differs from the model's")
    expected = set(model.state_dict())
    if cfg.get_text_config().tie_word_embeddings:
        expected.discard("lm_head.weight")
    missing, unexpected = expected - set(weights), set(weights) - expected
    if missing or unexpected:
        raise RuntimeError(f"weights from the .pte do not match the model: missing {sorted(missing)}, "
                           f"unexpected {sorted(unexpected)}")
    model.load_state_dict(weights, strict=False)
    model.tie_weights()
    return model


def top(logits: torch.Tensor, k: int = 5) -> List[List[Any]]:
    v, i = torch.topk(logits, k)
    return [[int(a), float(b)] for a, b in zip(i, v)]


def logits_summary(row: torch.Tensor) -> Dict[str, Any]:
    return {"argmax": int(row.argmax()), "top5": top(row), "first8": [float(x) for x in row[:8]],
            "std": float(row.std())}


def write_references(export_dir: pathlib.Path, prompt: str = DEFAULT_PROMPT, new_tokens: int = 64) -> Dict[str, Any]:
    from transformers import AutoTokenizer

    gen_info = json.loads((export_dir / "generation.json").read_text())
    pte = (export_dir / gen_info["pte"]["file"]).read_bytes()
    model = judge_model(export_dir, pte)
    tok = AutoTokenizer.from_pretrained(str(export_dir))
    ids = tok(prompt)["input_ids"]
    if len(ids) + new_tokens > gen_info["max_seq_len"]:
        raise ValueError(f"prompt {len(ids)} + {new_tokens} tokens exceed max_seq_len {gen_info['max_seq_len']}")

    model.generation_config.eos_token_id = None  # 64 tokens whatever comes; stops are judged by the caller
    model.generation_config.pad_token_id = gen_info["eos_token_ids"][0] if gen_info["eos_token_ids"] else 0
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                             output_logits=True, return_dict_in_generate=True)
    tokens = [int(t) for t in out.sequences[0, len(ids):]]
    logits = torch.stack([step[0].float() for step in out.logits])  # [new_tokens, vocab]
    assert len(tokens) == new_tokens and torch.equal(logits.argmax(-1), torch.tensor(tokens))
    top2 = torch.topk(logits, 2, dim=-1).values
    margins = (top2[:, 0] - top2[:, 1]).tolist()
    eos = [i for i, t in enumerate(tokens) if t in gen_info["eos_token_ids"]]

    n = len(ids)
    np.save(export_dir / "prefill_input_ids.npy", np.array([ids], dtype=np.int64))
    np.save(export_dir / "prefill_cache_position.npy", np.arange(n, dtype=np.int64))
    np.save(export_dir / "prefill_expected_last_logits.npy", logits[0].numpy().astype(np.float32))
    np.save(export_dir / "decode_input_ids.npy", np.array([[tokens[0]]], dtype=np.int64))
    np.save(export_dir / "decode_cache_position.npy", np.array([n], dtype=np.int64))
    np.save(export_dir / "decode_expected_logits.npy", logits[1].numpy().astype(np.float32).reshape(1, 1, -1))

    weights_note = {
        "fp32": "the .pte's fp32 weights",
        "bf16": "the .pte's bf16 weights widened to fp32",
    }[gen_info["dtype"]]
    if gen_info["quant"]:
        weights_note += "; 4-bit weights dequantised exactly in fp32 from the .pte's packed values and scales"
    ref = {
        "judge": f"transformers {model.__class__.__name__}.generate, greedy, float32, with {weights_note}",
        "prompt": prompt,
        "prompt_ids": ids,
        "bos_added_by_tokenizer": bool(ids and ids[0] == gen_info["bos_token_id"]),
        "new_tokens": new_tokens,
        "tokens": tokens,
        "text": tok.decode(tokens),
        "margins": margins,
        "min_margin": min(margins),
        "min_margin_step": int(np.argmin(margins)),
        "eos_token_ids": gen_info["eos_token_ids"],
        "eos_steps": eos,
        "note": ("margins[i] = top-1 minus top-2 logit of the judge at step i; generation did not stop at EOS "
                 "(eos_steps lists where an EOS id was produced)"),
        "prefill": {"input_ids": "prefill_input_ids.npy", "cache_position": "prefill_cache_position.npy",
                    "expected_last_logits": "prefill_expected_last_logits.npy", **logits_summary(logits[0])},
        "decode_step": {"input_ids": "decode_input_ids.npy", "cache_position": "decode_cache_position.npy",
                        "expected_logits": "decode_expected_logits.npy", "token": tokens[0], "position": n,
                        **logits_summary(logits[1])},
        "decode_step_note": ("run prefill (one call with the whole prompt) then decode_step (one call with one token "
                             "at position n) on one loaded program, the KV cache carrying over"),
    }
    (export_dir / "reference.json").write_text(ptefx.dumps_compact(ref) + "\n")
    return ref


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export_dir", type=pathlib.Path)
    ap.add_argument("--prompt", default=DEFAULT_PROMPT)
    ap.add_argument("--new-tokens", type=int, default=64)
    args = ap.parse_args(argv)
    ref = write_references(args.export_dir.resolve(), args.prompt, args.new_tokens)
    print(f"tokens {ref['tokens']}\nmin margin {ref['min_margin']:.4g} at step {ref['min_margin_step']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
