#!/usr/bin/env python3
"""The PyTorch peer of `wgml bench`: prompt processing (ppP) and token generation (tgN) of a random-weight Llama of
the benchmark programs' shapes (tools/llm_shapes.py), measured as `wgml bench` measures them, on a CUDA GPU.

- ppP: a prompt of P random token ids through an empty KV cache in one call, the last row's logits and their argmax
  made; P / its time.
- tgN: N single-token steps after that prompt, each fed the argmax of the step before without the host reading it
  (as `wgml bench` times greedy generation one step ahead); N / their time.

Each runs as a CUDA graph (captured once, replayed: no per-kernel launch cost, PyTorch's fastest decode) and
eagerly. The model is written out here in plain torch ops rather than taken from transformers so that nothing in it
syncs with the host and the graphs capture whole: RMSNorm, q/k/v/o, RoPE (Llama 3 frequency scaling), a static KV
cache written at the step's positions, F.scaled_dot_product_attention over the cache with a position mask and
grouped heads, SwiGLU MLP, the final norm and the lm_head over every row, as the ExecuTorch exports wgml runs make
the logits of every row of a call. `--check` compares its logits with transformers' LlamaForCausalLM on the same
weights (a small shape, on the CPU too).

The FLOP rate counts 2 x the weight elements each token multiplies and leaves attention's products out, as
`wgml bench` counts it.

Usage: torch_bench.py llama-1b [-p 512] [-n 128] [-r 3] [--dtype bf16] [--json OUT]
       torch_bench.py --check
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from llm_shapes import SHAPES  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def rope_inv_freq(cfg):
    """RoPE frequencies, with Llama 3's scaling of the long wavelengths where the config asks for it."""
    rope = cfg["rope_parameters"]
    dim = cfg["head_dim"]
    inv = 1.0 / (rope["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    if rope.get("rope_type") != "llama3":
        return inv.float()
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old = rope["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    smooth = (old / wavelen - low) / (high - low)
    scaled = torch.where(wavelen > old / low, inv / factor, inv)
    middle = (wavelen <= old / low) & (wavelen >= old / high)
    return torch.where(middle, (1 - smooth) * inv / factor + smooth * inv, scaled).float()


class Llama:
    """A Llama decoder over a static KV cache of `context` positions; weights ~ N(0, 0.02), norms ~ 1 + N(0, 0.1)."""

    def __init__(self, cfg, dtype, device, context, seed=0):
        g = torch.Generator(device=device).manual_seed(seed)
        self.cfg, self.dtype, self.device = cfg, dtype, device
        h, hd, nh, nkv = cfg["hidden_size"], cfg["head_dim"], cfg["num_attention_heads"], cfg["num_key_value_heads"]

        def weight(*shape, std=0.02, mean=0.0):
            # Drawn in chunks of rows so that an 8B model never needs a float32 copy of itself.
            out = torch.empty(*shape, dtype=dtype, device=device)
            rows = max(1, (1 << 26) // max(1, math.prod(shape[1:])))
            for r in range(0, shape[0], rows):
                chunk = torch.randn(min(rows, shape[0] - r), *shape[1:], generator=g, device=device)
                out[r:r + rows] = (chunk * std + mean).to(dtype)
            return out

        self.embed = weight(cfg["vocab_size"], h)
        self.layers = []
        for _ in range(cfg["num_hidden_layers"]):
            self.layers.append(dict(
                input_norm=weight(h, std=0.1, mean=1.0), q=weight(nh * hd, h), k=weight(nkv * hd, h),
                v=weight(nkv * hd, h), o=weight(h, nh * hd), post_norm=weight(h, std=0.1, mean=1.0),
                gate=weight(cfg["intermediate_size"], h), up=weight(cfg["intermediate_size"], h),
                down=weight(h, cfg["intermediate_size"])))
        self.norm = weight(h, std=0.1, mean=1.0)
        self.lm_head = self.embed if cfg["tie_word_embeddings"] else weight(cfg["vocab_size"], h)
        self.inv_freq = rope_inv_freq(cfg).to(device)
        self.context = context
        self.k_cache = torch.zeros(cfg["num_hidden_layers"], 1, nkv, context, hd, dtype=dtype, device=device)
        self.v_cache = torch.zeros_like(self.k_cache)

    def product_elements_per_token(self):
        """Weight elements each token multiplies: every layer's products and the lm_head."""
        layers = sum(w.numel() for layer in self.layers for k, w in layer.items() if not k.endswith("norm"))
        return layers + self.lm_head.numel()

    def weight_bytes_per_step(self):
        """Bytes of the weights a decode step reads: all but the embedding table (one row of it), unless tied."""
        tensors = [w for layer in self.layers for w in layer.values()] + [self.norm, self.lm_head]
        return sum(w.numel() * w.element_size() for w in tensors)

    def rms_norm(self, x, w):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.cfg["rms_norm_eps"])
        return w * xf.to(self.dtype)

    def rotate(self, x, cos, sin):
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return (x.float() * cos + rotated.float() * sin).to(self.dtype)

    def forward(self, tokens, positions):
        """Logits [1, T, vocab] of `tokens` [1, T] at `positions` [T] (int64), writing the KV cache there."""
        cfg = self.cfg
        nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        t = tokens.shape[1]
        angles = positions.float()[:, None] * self.inv_freq[None, :]
        cos = torch.cat((angles, angles), -1).cos()[None, None]
        sin = torch.cat((angles, angles), -1).sin()[None, None]
        # Key j is visible to the row at position p where j <= p.
        mask = torch.arange(self.context, device=self.device)[None, :] <= positions[:, None]
        x = F.embedding(tokens, self.embed)
        for i, w in enumerate(self.layers):
            h = self.rms_norm(x, w["input_norm"])
            q = (h @ w["q"].T).view(1, t, nh, hd).transpose(1, 2)
            k = (h @ w["k"].T).view(1, t, nkv, hd).transpose(1, 2)
            v = (h @ w["v"].T).view(1, t, nkv, hd).transpose(1, 2)
            q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
            self.k_cache[i].index_copy_(2, positions, k)
            self.v_cache[i].index_copy_(2, positions, v)
            a = F.scaled_dot_product_attention(q, self.k_cache[i], self.v_cache[i], attn_mask=mask, enable_gqa=True)
            x = x + a.transpose(1, 2).reshape(1, t, nh * hd) @ w["o"].T
            h = self.rms_norm(x, w["post_norm"])
            x = x + (F.silu(h @ w["gate"].T) * (h @ w["up"].T)) @ w["down"].T
        return self.rms_norm(x, self.norm) @ self.lm_head.T


class Runner:
    """The prompt call and the greedy decode step over static buffers, eagerly or as replayed CUDA graphs."""

    def __init__(self, model, prompt):
        self.model = model
        dev = model.device
        self.prompt = prompt.to(dev)
        self.prompt_positions = torch.arange(prompt.shape[1], device=dev)
        self.token = torch.zeros(1, 1, dtype=torch.long, device=dev)
        self.position = torch.zeros(1, dtype=torch.long, device=dev)
        self.graphs = {}

    def prefill(self):
        self.token.copy_(self.model.forward(self.prompt, self.prompt_positions)[:, -1].argmax(-1).view(1, 1))
        self.position.fill_(self.prompt.shape[1])

    def step(self):
        self.token.copy_(self.model.forward(self.token, self.position)[:, -1].argmax(-1).view(1, 1))
        self.position.add_(1)

    def capture(self):
        """Captures both calls (each run twice on a side stream first, as CUDA graphs require)."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                self.prefill()
                self.step()
        torch.cuda.current_stream().wait_stream(side)
        for name, fn in (("prefill", self.prefill), ("step", self.step)):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn()
            self.graphs[name] = graph

    def call(self, name):
        if name in self.graphs:
            self.graphs[name].replay()
        else:
            getattr(self, name)()


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def run_pass(runner, steps):
    """One pass: the prompt (its time ends when its argmax is made), then `steps` decode steps."""
    dev = runner.model.device
    synchronize(dev)
    start = time.perf_counter()
    runner.call("prefill")
    synchronize(dev)
    prompt_ms = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    for _ in range(steps):
        runner.call("step")
    synchronize(dev)
    return prompt_ms, (time.perf_counter() - start) * 1e3


def spread(values):
    return {"mean": statistics.fmean(values), "median": statistics.median(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0}


def bench(args):
    dev = torch.device(args.device)
    cfg = SHAPES[args.config]
    start = time.perf_counter()
    model = Llama(cfg, DTYPES[args.dtype], dev, args.prompt + args.generate)
    made_s = time.perf_counter() - start
    prompt = torch.randint(0, cfg["vocab_size"], (1, args.prompt), generator=torch.Generator().manual_seed(args.seed))
    flop_per_prompt = 2.0 * model.product_elements_per_token() * args.prompt
    report = {"runtime": f"torch {torch.__version__}", "config": args.config, "dtype": args.dtype,
              "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
              "prompt_tokens": args.prompt, "generate_tokens": args.generate, "repetitions": args.repetitions,
              "model_made_s": made_s, "prompt_product_flop": flop_per_prompt,
              "weight_bytes_per_step": model.weight_bytes_per_step(), "modes": {}}
    modes = ["cuda_graph", "eager"] if dev.type == "cuda" else ["eager"]
    with torch.inference_mode():
        for mode in modes:
            runner = Runner(model, prompt)
            if mode == "cuda_graph":
                runner.capture()
            run_pass(runner, args.generate)  # warm-up
            passes = [run_pass(runner, args.generate) for _ in range(args.repetitions)]
            pp = [args.prompt * 1e3 / p for p, _ in passes]
            tg = [args.generate * 1e3 / g for _, g in passes]
            report["modes"][mode] = {
                "pass_ms": [{"prompt_ms": p, "generate_ms": g} for p, g in passes],
                "tests": [{"test": f"pp{args.prompt}", "tokens": args.prompt, "tokens_per_s": spread(pp),
                           "median_rate": {"value": flop_per_prompt * statistics.median(pp) / args.prompt / 1e12,
                                           "unit": "TFLOP/s"}},
                          {"test": f"tg{args.generate}", "tokens": args.generate, "tokens_per_s": spread(tg),
                           "median_rate": {"value": model.weight_bytes_per_step() * statistics.median(tg) / 1e9,
                                           "unit": "GB/s"}}]}
            del runner
    return report


def print_table(report):
    print(f"torch peer: {report['config']} {report['dtype']} on {report['device']} ({report['runtime']}), "
          f"random weights made in {report['model_made_s']:.1f} s")
    print("| mode | test | t/s | median t/s | rate |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for mode, result in report["modes"].items():
        for t in result["tests"]:
            s, rate = t["tokens_per_s"], t["median_rate"]
            print(f"| {mode} | {t['test']} | {s['mean']:.2f} ± {s['stdev']:.2f} | {s['median']:.2f} | "
                  f"{rate['value']:.4g} {rate['unit']} |")


def check(device):
    """This model's logits against transformers' LlamaForCausalLM on the same weights, prompt and one step after."""
    import transformers

    cfg = dict(SHAPES["llama-1b"], hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
               head_dim=32, intermediate_size=256, vocab_size=300, bos_token_id=None, eos_token_id=None)
    dev = torch.device(device)
    model = Llama(cfg, torch.float32, dev, 16, seed=1)
    hf_cfg = transformers.LlamaConfig(**cfg)
    hf = transformers.LlamaForCausalLM(hf_cfg).to(dev).eval()
    names = {"input_norm": "input_layernorm", "post_norm": "post_attention_layernorm", "q": "self_attn.q_proj",
             "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj", "gate": "mlp.gate_proj",
             "up": "mlp.up_proj", "down": "mlp.down_proj"}
    state = {"model.embed_tokens.weight": model.embed, "model.norm.weight": model.norm, "lm_head.weight": model.lm_head}
    for i, layer in enumerate(model.layers):
        for ours, theirs in names.items():
            state[f"model.layers.{i}.{theirs}.weight"] = layer[ours]
    hf.load_state_dict(state, strict=True)
    tokens = torch.randint(0, cfg["vocab_size"], (1, 7), generator=torch.Generator().manual_seed(2)).to(dev)
    with torch.inference_mode():
        expected = hf(torch.cat([tokens, tokens[:, :1]], 1)).logits[0]
        first = model.forward(tokens, torch.arange(7, device=dev))[0]
        second = model.forward(tokens[:, :1], torch.tensor([7], device=dev))[0]
    worst = (torch.cat([first, second]) - expected).abs().max().item()
    print(f"check: largest logit difference to transformers {worst:.2e}")
    return 0 if worst < 1e-4 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", nargs="?", choices=sorted(SHAPES))
    ap.add_argument("-p", "--prompt", type=int, default=512)
    ap.add_argument("-n", "--generate", type=int, default=128)
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write every measurement here")
    ap.add_argument("--check", action="store_true", help="compare the model with transformers' and exit")
    args = ap.parse_args()
    if args.check:
        return check(args.device)
    if not args.config:
        ap.error("a config is required (or --check)")
    report = bench(args)
    print_table(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
