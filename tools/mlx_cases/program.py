"""Builds tiny MLX-delegate programs as FlatBuffers JSON, with MLX's results as expectations.

A case is one program plus one or more steps of inputs and expected outputs. The program is the
FlatBuffers JSON form of `schema/mlx_delegate.fbs`'s MLXGraph (the C++ test compiles it with
flatbuffers' own parser), so the cases go through the same decoder and validator as real exports.

Tensor slots are numbered as ExecuTorch numbers them: inputs, then outputs, then temps (no
constants). Only inputs carry tensor_meta, so the test sees each kernel's own output dtype.
"""
import base64

import mlx.core as mx
import numpy as np

# wgml dtype name, ExecuTorch ScalarType code, by MLX dtype.
DTYPES = {
    mx.uint8: ("uint8", 0),
    mx.int8: ("int8", 1),
    mx.int16: ("int16", 2),
    mx.int32: ("int32", 3),
    mx.int64: ("int64", 4),
    mx.float16: ("float16", 5),
    mx.bfloat16: ("bfloat16", 15),
    mx.float32: ("float32", 6),
    mx.bool_: ("bool", 11),
    mx.uint32: ("uint32", 28),
}


def scalar_type(dtype):
    return DTYPES[dtype][1]


def encode_array(a):
    """{"dtype", "shape", "data": base64 of the row-major bytes} for an MLX array."""
    a = mx.contiguous(a)
    raw = np.array(a.view(mx.uint16)) if a.dtype == mx.bfloat16 else np.array(a)
    return {
        "dtype": DTYPES[a.dtype][0],
        "shape": list(a.shape),
        "data": base64.b64encode(np.ascontiguousarray(raw).tobytes()).decode(),
    }


class Ref:
    """A tensor or value slot, numbered when the case is serialized."""

    def __init__(self, space, ordinal):
        self.space, self.ordinal = space, ordinal


class Case:
    def __init__(self, name, compare="close"):
        self.name = name
        # "close"; "close:<dtype>": at that dtype's tolerance (a float16 result cast to float32); or
        # "partition:<kth>:<axis>" (order within sides is free)
        self.compare = compare
        self.tensor_inputs, self.outputs, self.tensor_outputs, self.temps = [], [], 0, 0
        self.value_inputs, self.temp_values = [], 0
        self.inputs_in_order = []  # Refs, in input_map order
        self.chains = [[]]
        self.steps = [{"inputs": [], "outputs": []}]
        self.error = None

    # ---- slots -------------------------------------------------------------------------------
    def input(self, a, dynamic_dims=()):
        """A tensor input holding `a` in the first step; dims in dynamic_dims get [0, inf) bounds."""
        ref = Ref("in", len(self.tensor_inputs))
        self.tensor_inputs.append((a.dtype, list(a.shape), set(dynamic_dims)))
        self.inputs_in_order.append(ref)
        self.steps[0]["inputs"].append(encode_array(a))
        return ref

    def int_input(self, v):
        ref = Ref("vin", len(self.value_inputs))
        self.value_inputs.append(v)
        self.inputs_in_order.append(ref)
        self.steps[0]["inputs"].append({"int": int(v)})
        return ref

    def output(self, expected=None):
        """An output slot; `expected` (an MLX array) is its value in the first step."""
        ref = Ref("out", self.tensor_outputs)
        self.tensor_outputs += 1
        self.outputs.append(ref)
        if expected is not None:
            self.steps[0]["outputs"].append(encode_array(expected))
        return ref

    def int_output(self, expected):
        ref = Ref("vtmp", self.temp_values)
        self.temp_values += 1
        self.outputs.append(ref)
        self.steps[0]["outputs"].append({"int": int(expected)})
        return ref

    def temp(self):
        self.temps += 1
        return Ref("tmp", self.temps - 1)

    def temp_value(self):
        self.temp_values += 1
        return Ref("vtmp", self.temp_values - 1)

    def add_step(self, inputs, outputs):
        """Another run() of the same program: inputs as MLX arrays or ints, outputs as arrays."""
        enc = lambda v: {"int": int(v)} if isinstance(v, int) else encode_array(v)
        self.steps.append({"inputs": [enc(v) for v in inputs], "outputs": [enc(v) for v in outputs]})

    def expect_error(self, substring):
        self.error = substring

    # ---- instructions ------------------------------------------------------------------------
    def node(self, kind, chain=0, **fields):
        while len(self.chains) <= chain:
            self.chains.append([])
        self.chains[chain].append((kind, fields))

    # ---- serialization -----------------------------------------------------------------------
    def _index(self, ref):
        ni, no = len(self.tensor_inputs), self.tensor_outputs
        return {
            "in": ref.ordinal,
            "out": ni + ref.ordinal,
            "tmp": ni + no + ref.ordinal,
            "vin": ref.ordinal,
            "vtmp": len(self.value_inputs) + ref.ordinal,
        }[ref.space]

    def _resolve(self, v):
        if isinstance(v, Ref):
            return {"idx": self._index(v)}
        if isinstance(v, dict):
            return {k: self._resolve(x) for k, x in v.items() if x is not None}
        if isinstance(v, (list, tuple)):
            return [self._resolve(x) for x in v]
        return v

    def _slot(self, ref):
        if ref.space in ("vin", "vtmp"):
            return {"idx": self._index(ref), "slot_type": "IntValueSlot"}
        return {"idx": self._index(ref)}

    def to_json(self):
        meta = []
        for dtype, shape, dynamic in self.tensor_inputs:
            dims = [{"value": -1, "min_value": 0} if d in dynamic else {"value": n}
                    for d, n in enumerate(shape)]
            meta.append({"shape": dims, "scalar_type": scalar_type(dtype)})
        graph = {
            "version": "1",
            "num_input_tensors": len(self.tensor_inputs),
            "num_output_tensors": self.tensor_outputs,
            "num_temp_tensors": self.temps,
            "num_values": len(self.value_inputs) + self.temp_values,
            "instruction_chains": [
                {"instructions": [{"op_type": k, "op": self._resolve(f)} for k, f in chain]}
                for chain in self.chains
            ],
            "input_map": [self._slot(r) for r in self.inputs_in_order],
            "output_map": [self._slot(r) for r in self.outputs],
            "tensor_meta": meta,
        }
        out = {"name": self.name, "graph": graph, "steps": self.steps, "compare": self.compare}
        if self.error:
            out["error"] = self.error
        return out


# ---- operand helpers ---------------------------------------------------------------------------


def iv(v):
    """An IntOrVid: a literal int or a value-slot Ref."""
    if isinstance(v, Ref):
        return {"vid": v, "is_vid": True}
    return {"literal": int(v)}


def fv(v):
    """A FloatOrVid literal."""
    return {"literal": float(v)}
