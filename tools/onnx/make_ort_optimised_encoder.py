#!/usr/bin/env python3
"""Exports a tiny BERT-style encoder with random weights from torch to ONNX and runs ONNX Runtime's
own transformer optimizer on it, into tests/fixtures/onnx-encoder: the graph ORT-optimised BERT
models ship with (com.microsoft EmbedLayerNormalization, Attention with packed QKV weights and a
1-D mask_index, SkipLayerNormalization, BiasGelu), small enough to commit.

    $GENAI_VENV/bin/python tools/onnx/make_ort_optimised_encoder.py [--out tests/fixtures/onnx-encoder]

($GENAI_VENV: the venv tools/onnx/make_llm_decoders.py describes, or any with torch 2.15, transformers 5.24,
onnx 1.23 and onnxruntime 1.32; the model runs on the CPU). The encoder is transformers' BertModel (2 layers, hidden 64, 4 heads, vocabulary 100)
with every parameter drawn from a seeded generator. Its self-attention is exported in the form
transformers 4.x wrote (view, permute, matmul, divide by sqrt(head size), add the extended mask,
softmax), the pattern ORT's attention fusion matches; transformers 5's form leaves attention
unfused. Reruns write the same bytes. tools/onnx/compare_ort_encoder.py runs the committed model.
"""
import argparse
import collections
import math
import os
import sys
import tempfile

import onnx
import torch
import transformers
from onnxruntime.transformers.optimizer import optimize_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "bert_tiny_ort_optimised.onnx"
HEADS, HIDDEN = 4, 64
CONFIG = dict(vocab_size=100, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=HEADS, intermediate_size=128,
              max_position_embeddings=64, type_vocab_size=2)
# What ORT's BERT fusions must have produced; a change of the exporter or optimizer that loses one fails here.
EXPECTED_CONTRIB_OPS = {"EmbedLayerNormalization": 1, "Attention": 2, "SkipLayerNormalization": 4, "BiasGelu": 2}


def classic_self_attention(self, hidden_states, attention_mask=None, **_):
    """transformers 4.x BertSelfAttention without dropout: (context, no attention weights)."""
    def heads(x):
        return x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)).permute(0, 2, 1, 3)

    q, k, v = heads(self.query(hidden_states)), heads(self.key(hidden_states)), heads(self.value(hidden_states))
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
    probs = torch.softmax(scores + attention_mask, dim=-1)
    context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
    return context.view(context.size()[:-2] + (self.all_head_size,)), None


class Encoder(torch.nn.Module):
    """BertModel's forward as transformers 4.x exported it: the extended mask (1 - mask) * -10000."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        embeddings = self.bert.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        extended = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        hidden = self.bert.encoder(embeddings, attention_mask=extended).last_hidden_state
        return hidden, self.bert.pooler(hidden)


def random_encoder(seed):
    torch.manual_seed(seed)
    config = transformers.BertConfig(**CONFIG)
    config._attn_implementation = "eager"
    bert = transformers.BertModel(config, add_pooling_layer=True).eval()
    # Every parameter random (BertModel initializes norms to 1 and biases to 0, which the exporter
    # would fold into shared initializers): norm weights about 1, the rest about 0.
    with torch.no_grad():
        for name, p in bert.named_parameters():
            p.copy_(0.1 * torch.randn_like(p) + (1.0 if name.endswith("LayerNorm.weight") else 0.0))
    return Encoder(bert).eval()


def export(out):
    transformers.models.bert.modeling_bert.BertSelfAttention.forward = classic_self_attention
    model = random_encoder(seed=13)
    ids = torch.randint(0, CONFIG["vocab_size"], (2, 8))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    with tempfile.TemporaryDirectory(prefix="wgml_encoder_") as work:
        raw = os.path.join(work, "raw.onnx")
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), raw, input_names=names,
                          output_names=["last_hidden_state", "pooler_output"], dynamic_axes=axes, opset_version=17,
                          dynamo=False)
        optimized = optimize_model(raw, model_type="bert", num_heads=HEADS, hidden_size=HIDDEN)
    counts = collections.Counter(n.op_type for n in optimized.model.graph.node if n.domain == "com.microsoft")
    if dict(counts) != EXPECTED_CONTRIB_OPS:
        sys.exit(f"ORT's optimizer emitted {dict(counts)}, expected {EXPECTED_CONTRIB_OPS}")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    onnx.save(optimized.model, out)
    print(f"{out}: {os.path.getsize(out)} bytes, com.microsoft ops {dict(counts)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures", "onnx-encoder"))
    export(os.path.join(parser.parse_args().out, NAME))


if __name__ == "__main__":
    main()
