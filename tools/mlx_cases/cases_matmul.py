"""Matmul shapes that pick each GPU variant of Addmm: decode-like products (one to eight rows),
tiled products with partial edge tiles, broadcast batch dims on both sides, a weight used through
a transpose (as ExecuTorch exports nn.Linear), vector widths (N a multiple of 4 or not), f16 and bf16."""
import mlx.core as mx

from data import Data
from program import Case


def product(name, a, b, bias=None, alpha=1.0, beta=1.0, transpose_b=False):
    c = Case(name)
    ia, ib = c.input(a), c.input(b)
    if transpose_b:
        t = c.temp()
        c.node("TransposeNode", x=ib, out=t, perm=[1, 0])
        ib, b = t, mx.transpose(b)
    ibias = c.input(bias) if bias is not None else None
    expected = mx.addmm(bias, a, b, alpha=alpha, beta=beta) if bias is not None else mx.matmul(a, b)
    c.node("AddmmNode", mat1=ia, mat2=ib, out=c.output(expected), bias=ibias, alpha=alpha, beta=beta)
    return c


def matmul_cases():
    d = Data("AddmmShapes")
    f16, bf16 = mx.float16, mx.bfloat16
    return [
        product("decode_row", d.floats((1, 1, 300)), d.floats((300, 256))),
        product("decode_odd_columns", d.floats((1, 300)), d.floats((300, 37)), d.floats((37,))),
        product("decode_linear_weight", d.floats((1, 1, 96)), d.floats((4100, 96)), d.floats((4100,)), transpose_b=True),
        product("five_rows_f16", d.floats((5, 200), f16), d.floats((200, 64), f16), d.floats((64,), f16)),
        product("eight_rows_bias_matrix", d.floats((8, 33)), d.floats((33, 20)), d.floats((8, 20)), 0.5, 2.0),
        product("tiled_edges", d.floats((70, 33)), d.floats((33, 67)), d.floats((67,))),
        product("tiled_deep", d.floats((9, 520), lo=-0.5, hi=0.5), d.floats((520, 130), lo=-0.5, hi=0.5)),
        product("tiled_seq_linear", d.floats((2, 40, 48)), d.floats((72, 48)), transpose_b=True),
        product("tiled_f16", d.floats((65, 72), f16), d.floats((72, 40), f16)),
        product("decode_bf16", d.floats((1, 1, 64), bf16), d.floats((96, 64), bf16), d.floats((96,), bf16), transpose_b=True),
        product("tiled_bf16", d.floats((33, 40), bf16), d.floats((40, 24), bf16), d.floats((24,), bf16)),
        product("batched_broadcast", d.floats((2, 1, 5, 6)), d.floats((3, 6, 7))),
        product("batched_tiled", d.floats((3, 20, 17)), d.floats((3, 17, 19)), d.floats((3, 1, 19))),
        product("batched_decode_attention_like", d.floats((4, 1, 64)), d.floats((4, 64, 50))),
    ]


def cases():
    return {"AddmmNode": matmul_cases()}
