#!/usr/bin/env python3
"""Export a Hugging Face causal LM to an ExecuTorch MLX-delegate .pte with ExecuTorch's own LLM exporter.

The export itself is ExecuTorch 1.5.1's MLX LLM path, called as a library:
`executorch.backends.mlx.examples.llm.export_llm_hf.export_llama_hf` with custom SDPA (`mlx::custom_sdpa`) and the
mutable-buffer KV cache (`mlx::kv_cache_update`), i.e. `python -m executorch.backends.mlx.examples.llm.export_llm_hf
--use-custom-sdpa --use-custom-kv-cache`, the options ExecuTorch's CI exports Llama-3.2-1B and Qwen3-0.6B with.
`--quant 4w` is the CI's `--qlinear 4w --qembedding 4w` (torchao int4 weight-only, HQQ scales, group size 32 unless
`--group-size` says otherwise; a tied lm_head stays tied to the quantised embedding).

Model source, one of:
  --model-dir DIR   a Hugging Face checkpoint directory: config.json, the weights as *.safetensors (one file or an
                    index with shards), and the tokenizer files (tokenizer.json and/or tokenizer.model,
                    tokenizer_config.json, optionally generation_config.json / special_tokens_map.json /
                    chat_template.jinja). Architectures transformers' AutoModelForCausalLM loads and the exporter
                    supports (Llama, Qwen2, Qwen3, Mistral, Gemma, ...).
  --config NAME     random weights from a fixed seed (see CONFIGS): tiny-llama and tiny-qwen3 for tests (they
                    take the committed test tokenizer tests/fixtures/llm/tokenizers/bpe), llama-1b and llama-8b
                    for benchmarks (no tokenizer; token ids only).

Next to --out it writes:
  config.json            the model's Hugging Face config (architecture for tools/llm/make_references.py)
  tokenizer files        copied from the checkpoint or the test tokenizer
  generation.json        bos/eos ids, max_seq_len, the largest call (prefill chunk), the exported signature
                         (names, dtypes, shapes, dynamic-dim bounds), KV-cache buffers, node histogram, exporter
                         arguments and versions
and with --reference also reference.json and the decode-step .npy files (tools/llm/make_references.py).

--payload-only OUT.mlxg instead of --out writes only the MLX delegate payload (what `llm_decode --extract` takes
out of a .pte): the same export with no weight read, drawn, quantised or stored (`weights_untouched`), so an 8B
program takes a few GB of memory. For llama-1b it is byte-identical to the real exports' payloads.

Environment: the export venv ($VENV) of docs/llm-export.md (executorch 1.5.1, torch 2.14.1, transformers 5.3.0).
Usage:
  python tools/export_llm.py --config tiny-llama --dtype fp32 --quant none --out /tmp/tiny/model.pte --reference
  python tools/export_llm.py --model-dir ~/Llama-3.2-1B-Instruct --dtype bf16 --quant 4w --max-seq-len 2048 \\
      --out llama1b/model.pte
  python tools/export_llm.py --config llama-8b --dtype bf16 --quant 4w \\
      --payload-only bench/llm_decode/programs/llama-8b-bf16-4w.mlxg
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import mmap
import pathlib
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence
from unittest import mock

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools" / "fixtures"))

# Generates the MLX delegate's python bindings the wheel lacks, then imports torch and executorch (see
# docs/fixtures.md, "Missing generated bindings"); its payload inspector is reused below.
import export_pte_fixtures as ptefx  # noqa: E402
from llm_shapes import SHAPES  # noqa: E402

import torch  # noqa: E402
from executorch.backends.mlx.examples.llm.export_llm_hf import export_llama_hf  # noqa: E402

TEST_TOKENIZER_DIR = REPO_ROOT / "tests" / "fixtures" / "llm" / "tokenizers" / "bpe"
TOKENIZER_FILES = [
    "tokenizer.json",
    "tokenizer.model",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
    "chat_template.jinja",
]
EXPORTER = "executorch.backends.mlx.examples.llm.export_llm_hf.export_llama_hf"
DEFAULT_PREFILL_CHUNK = 512  # export_llm_hf's --prefill-chunk-size default
SHARD_BYTES = 2 << 30


@dataclass
class RandomConfig:
    """A random-weight model: a transformers config plus how its weights are drawn."""

    architecture: str
    config: Dict[str, Any]
    seed: int
    max_seq_len: int
    # Weights ~ N(0, init_std); every *norm.weight ~ 1 + N(0, norm_std) so that a runtime that ignores a norm's
    # weight is caught (transformers initialises them to exactly 1).
    init_std: float
    norm_std: float
    checkpoint_dtype: torch.dtype
    tokenizer_dir: Optional[pathlib.Path]
    description: str
    extra: Dict[str, Any] = field(default_factory=dict)


_TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
             intermediate_size=128, vocab_size=512, max_position_embeddings=128,
             bos_token_id=507, eos_token_id=[508, 511], tie_word_embeddings=True)

CONFIGS: Dict[str, RandomConfig] = {
    "tiny-llama": RandomConfig(
        "LlamaForCausalLM",
        dict(_TINY, rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        seed=1108, max_seq_len=128, init_std=0.25, norm_std=0.1, checkpoint_dtype=torch.float32,
        tokenizer_dir=TEST_TOKENIZER_DIR,
        description="Llama-3.2-style: hidden 64, 2 layers, 4 heads, 2 KV heads, head_dim 16, MLP 128, vocab 512, "
                    "rope theta 1e4, tied embeddings"),
    "tiny-qwen3": RandomConfig(
        "Qwen3ForCausalLM",
        dict(_TINY, rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
             attention_bias=False, use_sliding_window=False),
        seed=1201, max_seq_len=128, init_std=0.25, norm_std=0.1, checkpoint_dtype=torch.float32,
        tokenizer_dir=TEST_TOKENIZER_DIR,
        description="Qwen3-style (per-head q/k RMSNorm): hidden 64, 2 layers, 4 heads, 2 KV heads, head_dim 16, "
                    "MLP 128, vocab 512, rope theta 1e6, tied embeddings"),
    "llama-1b": RandomConfig(
        "LlamaForCausalLM",
        SHAPES["llama-1b"],
        seed=1103, max_seq_len=2048, init_std=0.02, norm_std=0.1, checkpoint_dtype=torch.bfloat16,
        tokenizer_dir=None,
        description="Llama-3.2-1B shapes: hidden 2048, 16 layers, 32 heads, 8 KV heads, MLP 8192, vocab 128256, "
                    "tied embeddings"),
    "llama-8b": RandomConfig(
        "LlamaForCausalLM",
        SHAPES["llama-8b"],
        seed=1104, max_seq_len=2048, init_std=0.02, norm_std=0.1, checkpoint_dtype=torch.bfloat16,
        tokenizer_dir=None,
        description="Llama-3.1-8B shapes: hidden 4096, 32 layers, 32 heads, 8 KV heads, MLP 14336, vocab 128256, "
                    "untied embeddings"),
}


# ---------------------------------------------------------------------------
# Random checkpoints
# ---------------------------------------------------------------------------


def make_hf_config(rc: RandomConfig):
    import transformers

    config_class = getattr(transformers, rc.architecture).config_class
    cfg = config_class(**rc.config)
    cfg.architectures = [rc.architecture]
    cfg.dtype = rc.checkpoint_dtype
    return cfg


def checkpoint_tensors(cfg, dtype: Optional[torch.dtype] = None) -> Dict[str, torch.Tensor]:
    """The tensors a checkpoint of this config holds, on the meta device (names, shapes, dtypes; no data): the
    model's state_dict less a tied lm_head, which a checkpoint leaves out as save_pretrained does."""
    import transformers

    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    tensors = dict(model.state_dict())
    if cfg.get_text_config().tie_word_embeddings:
        tensors.pop("lm_head.weight", None)
    return tensors


def write_random_checkpoint(name: str, out_dir: pathlib.Path) -> None:
    """A Hugging Face checkpoint directory (config.json + safetensors shards) with seeded random weights.

    Parameter names and shapes come from the architecture built on the meta device; values are drawn one tensor
    at a time in state_dict order, so memory stays at one shard and the result depends only on the seed.
    """
    from safetensors.torch import save_file

    rc = CONFIGS[name]
    cfg = make_hf_config(rc)
    shapes = {k: tuple(v.shape) for k, v in checkpoint_tensors(cfg).items()}
    gen = torch.Generator().manual_seed(rc.seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    shards: List[Dict[str, torch.Tensor]] = [{}]
    shard_bytes = 0
    for key, shape in shapes.items():
        if key.endswith("norm.weight"):
            value = 1.0 + rc.norm_std * torch.randn(shape, generator=gen)
        else:
            value = rc.init_std * torch.randn(shape, generator=gen)
        value = value.to(rc.checkpoint_dtype)
        nbytes = value.numel() * value.element_size()
        if shard_bytes and shard_bytes + nbytes > SHARD_BYTES:
            shards.append({})
            shard_bytes = 0
        shards[-1][key] = value
        shard_bytes += nbytes
    weight_map = {}
    for i, shard in enumerate(shards):
        file = "model.safetensors" if len(shards) == 1 else f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(out_dir / file), metadata={"format": "pt"})
        weight_map.update({k: file for k in shard})
    if len(shards) > 1:
        total = sum(v.numel() * v.element_size() for s in shards for v in s.values())
        (out_dir / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1))
    cfg.save_pretrained(str(out_dir))


# ---------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------


def exporter_args(model_dir: pathlib.Path, out: pathlib.Path, dtype: str, quant: str, group_size: int,
                  max_seq_len: int, prefill_chunk: int) -> Dict[str, Any]:
    q = "4w" if quant == "4w" else None
    return dict(model_id=str(model_dir), revision=None, output_path=str(out), max_ctx_len=max_seq_len, dtype=dtype,
                qlinear=q, qembedding=q, use_custom_sdpa=True, use_custom_kv_cache=True,
                use_offgraph_cache=False, no_tie_word_embeddings=False,
                qlinear_group_size=group_size if q else None, qembedding_group_size=group_size if q else None,
                tap_layers=None, prefill_chunk_size=prefill_chunk)


def run_exporter(args: Dict[str, Any]) -> float:
    """ExecuTorch's MLX LLM export (torch.export, MLX partitioner, to_executorch, save); returns seconds."""
    t0 = time.monotonic()
    export_llama_hf(**args)
    return time.monotonic() - t0


# ---------------------------------------------------------------------------
# Exporting without weights (--payload-only)
# ---------------------------------------------------------------------------


class ZeroPages:
    """Tensors of zeros on fresh private anonymous mappings: reads see the kernel's shared zero page, so the pages
    nothing writes take no memory (an 8B model's 16 GB of bf16 weights cost nothing while only their shapes are
    used). Private, not Python's default shared mapping: a shared one is shmem, where reading a page allocates it.

    It keeps every mapping it made, so that an address names one of them for as long as it lives: `owns` tells its
    tensors from any other, and `copy` gives a copy of one (zeros again) without writing a page."""

    def __init__(self) -> None:
        self._mappings: Dict[int, mmap.mmap] = {}

    def tensor(self, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype)
        pages = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        flat = torch.frombuffer(pages, dtype=dtype)
        self._mappings[flat.data_ptr()] = pages
        return flat.reshape(shape)

    def owns(self, t: torch.Tensor) -> bool:
        return type(t) in (torch.Tensor, torch.nn.Parameter) and t.untyped_storage().data_ptr() in self._mappings

    def copy(self, t: torch.Tensor) -> torch.Tensor:
        """t's values (zeros) with t's size, strides and storage offset, on new pages."""
        storage = self.tensor((t.untyped_storage().nbytes() // t.element_size(),), t.dtype)
        return storage.as_strided(t.size(), t.stride(), t.storage_offset())

    def hqq_shapes_only(self, hp_tensor: torch.Tensor, block_size: List[int], qmin: int, qmax: int, **_: Any):
        """torchao's `_choose_qparams_and_quantize_scale_only_hqq` without the search (20 passes over each
        weight, the 1B's 5 minutes): zero qdata and scales of the shapes and dtypes it returns. qdata comes as the
        int8 that `IntxUnpackedToInt8Tensor.from_hp` casts the real int32 result to, so that cast copies nothing."""
        rows, cols = hp_tensor.shape
        return self.tensor((rows, cols), torch.int8), self.tensor((rows, cols // block_size[1]), hp_tensor.dtype)


@contextlib.contextmanager
def weights_untouched():
    """Within it, export_llama_hf runs as it is, except that no weight is read, computed or stored:

    - `AutoModelForCausalLM.from_pretrained(DIR, ...)` reads DIR's config as ever, and the model class's
      `from_pretrained(DIR, config=...)` it then calls becomes `from_pretrained(None, config=...,
      state_dict=<ZeroPages tensors of the checkpoint's names and shapes, in the load dtype>)`: the same loading
      code, handed these instead of the safetensors files, which need not exist;
    - the 4-bit quantisation's scale search is `ZeroPages.hqq_shapes_only`;
    - copies that would write every weight again copy ZeroPages tensors as ZeroPages: Dynamo's `clone_input`
      (torch.export keeps a copy of every parameter it traces, and of every quantised weight's parts) and
      `copy.deepcopy` of tensors and parameters (ExecuTorch's `BackendDetails.copy_exported_program_for_preprocess`
      deep-copies the program it lowers). Exact, because nothing writes these weights: quantisation replaces them;
    - the MLX backend's named data store (the weight bytes of the .pte) stays empty.

    The payload depends on the graph, the tensors' metadata and whether the zero points are all zero (they are,
    for the symmetric int4 scheme, from torchao itself), so it comes out as the real export's: checked byte for byte
    against the llama-1b exports (docs/llm-export.md, "Payloads without weights").
    """
    from executorch.backends.mlx.builder.program_builder import MLXProgramBuilder
    from executorch.exir._serialize._named_data_store import NamedDataStore
    from torch._dynamo.utils import copy_dynamo_tensor_attributes
    from torch._dynamo.variables import builder as dynamo_builder
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass
    from torchao.quantization.quantize_.workflows.intx import intx_unpacked_to_int8_tensor
    from transformers import PreTrainedModel

    pages = ZeroPages()
    load = PreTrainedModel.from_pretrained.__func__
    clone_input = dynamo_builder.clone_input

    def load_zero_weights(model_class, _checkpoint_dir: str, *args: Any, config, **kwargs: Any):
        dtype = kwargs.get("dtype", kwargs.get("torch_dtype"))
        weights = {k: pages.tensor(v.shape, v.dtype) for k, v in checkpoint_tensors(config, dtype).items()}
        return load(model_class, None, *args, config=config, state_dict=weights, **kwargs)

    def clone_zero_pages(x: torch.Tensor, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        if dtype is not None:
            return clone_input(x, dtype=dtype)
        if is_traceable_wrapper_subclass(x):  # a quantised weight: its qdata and scales are ZeroPages
            names, context = x.__tensor_flatten__()
            inner = {name: clone_zero_pages(getattr(x, name)) for name in names}
            copy = type(x).__tensor_unflatten__(inner, context, x.size(), x.stride())
        elif pages.owns(x):
            copy = pages.copy(x)
        else:
            return clone_input(x)
        if x.is_leaf:
            copy.requires_grad_(x.requires_grad)
        copy_dynamo_tensor_attributes(x, copy)
        return copy

    def deepcopy_zero_pages(cls: type) -> Callable:
        deepcopy = cls.__deepcopy__

        def copy_of(t: torch.Tensor, memo: Dict[int, Any]) -> torch.Tensor:
            if id(t) in memo or not pages.owns(t):
                return deepcopy(t, memo)
            copy = pages.copy(t).requires_grad_(t.requires_grad)
            memo[id(t)] = copy if cls is torch.Tensor else cls(copy, t.requires_grad)
            return memo[id(t)]
        return copy_of

    with mock.patch.object(PreTrainedModel, "from_pretrained", classmethod(load_zero_weights)), \
            mock.patch.object(intx_unpacked_to_int8_tensor, "_choose_qparams_and_quantize_scale_only_hqq",
                              pages.hqq_shapes_only), \
            mock.patch.object(dynamo_builder, "clone_input", clone_zero_pages), \
            mock.patch.object(torch.Tensor, "__deepcopy__", deepcopy_zero_pages(torch.Tensor)), \
            mock.patch.object(torch.nn.Parameter, "__deepcopy__", deepcopy_zero_pages(torch.nn.Parameter)), \
            mock.patch.object(MLXProgramBuilder, "get_named_data_store", lambda builder: NamedDataStore()):
        yield


# ---------------------------------------------------------------------------
# Describing the result
# ---------------------------------------------------------------------------


def constant_methods(pte: bytes) -> Dict[str, Any]:
    """Values of the program's constant methods (get_max_ctx_len, get_prefill_chunk_size, ...)."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    out: Dict[str, Any] = {}
    for plan in deserialize_pte_binary(pte).program.execution_plan:
        if plan.name == "forward" or len(plan.inputs) or len(plan.outputs) != 1:
            continue
        val = plan.values[plan.outputs[0]].val
        out[plan.name] = getattr(val, "int_val", getattr(val, "double_val", getattr(val, "bool_val", None)))
    return out


def forward_plan_io(pte: bytes) -> Dict[str, Any]:
    """The forward method as ExecuTorch declares it (not the delegate): its inputs, outputs and the program-level
    ops around the MLX delegate."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    plan = next(p for p in deserialize_pte_binary(pte).program.execution_plan if p.name == "forward")
    ops = [op.name for op in plan.operators]
    instructions = []
    for chain in plan.chains:
        for ins in chain.instructions:
            a = ins.instr_args
            kind = type(a).__name__
            instructions.append(f"{kind}({ops[a.op_index]})" if kind == "KernelCall" else kind)

    def tensor(i: int) -> Dict[str, Any]:
        v = plan.values[i].val
        st = int(v.scalar_type)
        return {"dtype": ptefx.ET_SCALAR_TYPES.get(st, (f"scalar_type_{st}",))[0], "max_shape": list(v.sizes)}

    return {"num_inputs": len(plan.inputs), "num_outputs": len(plan.outputs),
            "inputs": [tensor(i) for i in plan.inputs], "outputs": [tensor(i) for i in plan.outputs],
            "instructions": instructions}


def signature(facts: Dict[str, Any], vocab: int) -> Dict[str, Any]:
    """Inputs/outputs of the MLX delegate with names, dtypes and dynamic-dim bounds from the payload."""
    metas = {m["tid"]: m for m in facts["tensor_meta"] if m is not None}
    names = {s["slot_idx"]: s["name"] for s in facts["named_slots"]}

    def desc(slot: Dict[str, Any]) -> Dict[str, Any]:
        m = metas[slot["idx"]]
        return {"name": names.get(slot["idx"]), "tid": slot["idx"], "dtype": m["dtype"], "shape": m["shape"]}

    inputs = [desc(s) for s in facts["input_map"]]
    outputs = [desc(s) for s in facts["output_map"]]
    for o in outputs:
        o["role"] = "logits" if o["shape"] and o["shape"][-1] == vocab else "other"
    return {"inputs": inputs, "outputs": outputs,
            "mutable_buffers": [desc(s) for s in facts["mutable_buffer_map"]]}


def seq_bounds(sig: Dict[str, Any]) -> Dict[str, int]:
    dim = sig["inputs"][0]["shape"][1]
    return dim if isinstance(dim, dict) else {"min": dim, "max": dim}


def tokenizer_ids(model_dir: pathlib.Path, cfg) -> Dict[str, Any]:
    """bos/eos ids: generation_config.json first (it lists every stop token), else the model config."""
    gen_path = model_dir / "generation_config.json"
    gen = json.loads(gen_path.read_text()) if gen_path.exists() else {}
    bos = gen.get("bos_token_id", cfg.bos_token_id)
    eos = gen.get("eos_token_id", cfg.eos_token_id)
    eos_ids = eos if isinstance(eos, list) else ([] if eos is None else [eos])
    return {"bos_token_id": bos, "eos_token_ids": eos_ids}


def copy_tokenizer(src: Optional[pathlib.Path], dst: pathlib.Path) -> List[str]:
    copied = []
    if src is None:
        return copied
    for name in TOKENIZER_FILES:
        if (src / name).exists():
            shutil.copyfile(src / name, dst / name)
            copied.append(name)
    return copied


def text_config_summary(cfg) -> Dict[str, Any]:
    t = cfg.get_text_config()
    keys = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
            "intermediate_size", "vocab_size", "rms_norm_eps", "tie_word_embeddings", "rope_parameters"]
    return {k: getattr(t, k, None) for k in keys}


def generator_versions() -> Dict[str, Any]:
    import torchao
    import transformers

    return {"script": "tools/export_llm.py", "exporter": EXPORTER, "executorch": ptefx._et_version(),
            "torch": torch.__version__, "torchao": torchao.__version__, "transformers": transformers.__version__,
            "python": sys.version.split()[0]}


def describe_export(pte_path: pathlib.Path, model_dir: pathlib.Path, source: str, dtype: str, quant: str,
                    group_size: int, exporter: Dict[str, Any], seconds: float,
                    tokenizer_files: List[str]) -> Dict[str, Any]:
    from transformers import AutoConfig

    pte = pte_path.read_bytes()
    facts, _, _ = ptefx.inspect_pte(pte)
    cfg = AutoConfig.from_pretrained(str(model_dir))
    vocab = cfg.get_text_config().vocab_size
    sig = signature(facts, vocab)
    methods = constant_methods(pte)
    bounds = seq_bounds(sig)
    chains = []
    for i, ch in enumerate(facts["chains"]):
        role = "main" if i == facts["main_chain_idx"] else "init" if i == facts["init_chain_idx"] else "other"
        chains.append({"index": i, "role": role, "num_instructions": ch["num_instructions"],
                       "node_histogram": ch["node_histogram"]})
    return {
        "format": "wgml-llm-generation/1",
        "source": source,
        "architecture": (cfg.architectures or [None])[0],
        "config": text_config_summary(cfg),
        "dtype": dtype,
        "quant": None if quant == "none" else {
            "linear": "4w", "embedding": "4w", "group_size": group_size,
            "scheme": "torchao IntxWeightOnlyConfig(int4, PerGroup, hqq_scale_only): symmetric int4, per-group "
                      "scales; MLX affine form with biases = -8 * scales"},
        **tokenizer_ids(model_dir, cfg),
        "max_seq_len": methods.get("get_max_ctx_len"),
        "max_tokens_per_call": bounds["max"],
        "recorded_min_tokens_per_call": bounds["min"],
        "calls": (
            "forward(input_ids int64 [1, n], cache_position int64 [n]) -> logits [1, n, vocab] for every position "
            "of the call. cache_position holds the absolute positions arange(p, p + n) of these tokens; the KV cache "
            "(mutable buffers, zero at load) is written there and attention covers positions [0, p + n). Prefill: "
            "the prompt in calls of at most max_tokens_per_call tokens; decode: one call per token, n = 1, "
            "cache_position [p]. p + n <= max_seq_len. torch.export records n >= 2 (its 0/1 specialisation); "
            "ExecuTorch's runner calls with n = 1 all the same."),
        "forward_method": forward_plan_io(pte),
        "delegate": sig,
        "constant_methods": methods,
        "mlx": {"chains": chains, "num_constants": facts["num_constant_tensors"],
                "named_data_bytes": facts["named_data_total_bytes"], "payload_bytes": facts["payload_bytes"]},
        "pte": {"file": pte_path.name, "bytes": len(pte), "sha256": hashlib.sha256(pte).hexdigest()},
        "tokenizer_files": tokenizer_files,
        "exporter_args": {k: v for k, v in exporter.items() if k not in ("model_id", "output_path")},
        "export_seconds": round(seconds, 1),
        "generator": generator_versions(),
    }


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def export(out: pathlib.Path, dtype: str, quant: str, group_size: int, max_seq_len: int,
           prefill_chunk: Optional[int], config: Optional[str] = None, model_dir: Optional[pathlib.Path] = None,
           work_dir: Optional[pathlib.Path] = None, weightless: bool = False) -> Dict[str, Any]:
    """Export one model; writes out, config.json, tokenizer files and generation.json next to it.

    weightless: the program without its weights (`weights_untouched`): a random config's checkpoint is its
    config.json alone, and the .pte holds no named data."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    prefill_chunk = prefill_chunk or min(DEFAULT_PREFILL_CHUNK, max_seq_len)
    scratch = None
    try:
        if config is not None:
            scratch = pathlib.Path(tempfile.mkdtemp(prefix=f"wgml_{config}_", dir=work_dir))
            if weightless:
                make_hf_config(CONFIGS[config]).save_pretrained(str(scratch))
            else:
                t0 = time.monotonic()
                write_random_checkpoint(config, scratch)
                print(f"[export_llm] random checkpoint {config} in {time.monotonic() - t0:.1f} s", flush=True)
            model_dir, source, tok_src = scratch, f"config:{config}", CONFIGS[config].tokenizer_dir
        else:
            source, tok_src = f"model-dir:{model_dir.name}", model_dir
        args = exporter_args(model_dir, out, dtype, quant, group_size, max_seq_len, prefill_chunk)
        with weights_untouched() if weightless else contextlib.nullcontext():
            seconds = run_exporter(args)
        print(f"[export_llm] exported {out} ({out.stat().st_size} bytes) in {seconds:.1f} s", flush=True)
        shutil.copyfile(model_dir / "config.json", out.parent / "config.json")
        tok_files = copy_tokenizer(tok_src, out.parent)
        info = describe_export(out, out.parent if config else model_dir, source, dtype, quant, group_size, args,
                               seconds, tok_files)
        (out.parent / "generation.json").write_text(ptefx.dumps_compact(info) + "\n")
        return info
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def export_payload(payload_out: pathlib.Path, dtype: str, quant: str, group_size: int, max_seq_len: int,
                   prefill_chunk: Optional[int], config: Optional[str] = None,
                   model_dir: Optional[pathlib.Path] = None, work_dir: Optional[pathlib.Path] = None) -> Dict[str, Any]:
    """The MLX delegate payload (.mlxg, what `llm_decode --extract` takes out of a .pte) of a weightless export."""
    with tempfile.TemporaryDirectory(prefix="wgml_payload_", dir=work_dir) as tmp:
        pte = pathlib.Path(tmp) / "model.pte"
        info = export(pte, dtype, quant, group_size, max_seq_len, prefill_chunk, config=config, model_dir=model_dir,
                      work_dir=work_dir, weightless=True)
        _, payload, _ = ptefx.inspect_pte(pte.read_bytes())
    payload_out.parent.mkdir(parents=True, exist_ok=True)
    payload_out.write_bytes(payload)
    print(f"[export_llm] payload {payload_out} ({len(payload)} bytes)", flush=True)
    return info


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model-dir", type=pathlib.Path, help="Hugging Face checkpoint directory")
    src.add_argument("--config", choices=sorted(CONFIGS), help="random-weight configuration")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--quant", choices=["none", "4w"], default="none",
                    help="4w: int4 weights for every linear layer and the embedding (ExecuTorch CI's 4w)")
    ap.add_argument("--group-size", type=int, choices=[32, 64, 128], default=32, help="4w group size")
    ap.add_argument("--max-seq-len", type=int, default=None,
                    help="KV-cache length (default: 128 for tiny configs, 2048 otherwise)")
    ap.add_argument("--prefill-chunk", type=int, default=None,
                    help="most tokens one call takes (default: min(512, max-seq-len))")
    dst = ap.add_mutually_exclusive_group(required=True)
    dst.add_argument("--out", type=pathlib.Path, help="output .pte")
    dst.add_argument("--payload-only", type=pathlib.Path, metavar="OUT.mlxg",
                     help="write only the MLX delegate payload, exported without weights (none is read, drawn, "
                          "quantised or stored): an 8B program in a few GB of memory")
    ap.add_argument("--work-dir", type=pathlib.Path, default=None, help="where random checkpoints are written")
    ap.add_argument("--reference", action="store_true",
                    help="also write reference.json and the decode-step .npy files (tools/llm/make_references.py)")
    args = ap.parse_args(argv)
    max_seq_len = args.max_seq_len or (CONFIGS[args.config].max_seq_len if args.config else 2048)
    if args.payload_only and args.reference:
        ap.error("--reference needs the weights: not with --payload-only")
    if args.payload_only:
        info = export_payload(args.payload_only, args.dtype, args.quant, args.group_size, max_seq_len,
                              args.prefill_chunk, config=args.config, model_dir=args.model_dir,
                              work_dir=args.work_dir)
    else:
        info = export(args.out, args.dtype, args.quant, args.group_size, max_seq_len, args.prefill_chunk,
                      config=args.config, model_dir=args.model_dir, work_dir=args.work_dir)
    for ch in info["mlx"]["chains"]:
        print(f"  chain {ch['index']} ({ch['role']}): {ch['node_histogram']}")
    if args.reference:
        sys.path.insert(0, str(REPO_ROOT / "tools" / "llm"))
        import make_references

        make_references.write_references(args.out.resolve().parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
