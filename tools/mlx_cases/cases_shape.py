"""Layout and indexing nodes."""
import mlx.core as mx
import numpy as np

from data import Data
from program import Case, fv, iv, scalar_type


def simple(name, kind, x, expected, **attrs):
    c = Case(name)
    ix = c.input(x)
    c.node(kind, x=ix, out=c.output(expected), **attrs)
    return c


def expand_dims_cases():
    d = Data("ExpandDims")
    x = d.floats((2, 3))
    return [simple(f"axis_{a}", "ExpandDimsNode", x, mx.expand_dims(x, a), axis=a) for a in (0, 1, 2, -1, -3)] + [
        simple("empty", "ExpandDimsNode", d.floats((0, 2)), mx.zeros((0, 1, 2)), axis=1)]


def tile_cases():
    d = Data("Tile")
    out = []
    for name, shape, reps in (("same_rank", (2, 3), [2, 1]), ("more_reps", (3,), [2, 2]),
                              ("fewer_reps", (2, 2, 2), [3]), ("zero_rep", (2, 3), [0, 2]),
                              ("int8", (2,), [1, 4])):
        x = d.any(shape, mx.int8 if name == "int8" else mx.float32)
        out.append(simple(name, "TileNode", x, mx.tile(x, reps), reps=[iv(r) for r in reps]))
    c = Case("rep_from_value")
    x = d.floats((2, 2))
    ix, r = c.input(x), c.int_input(3)
    c.node("TileNode", x=ix, out=c.output(mx.tile(x, [3, 1])), reps=[iv(r), iv(1)])
    return out + [c]


def take_along_axis_cases():
    d = Data("TakeAlongAxis")

    def case(name, x, idx, axis):
        c = Case(name)
        ix, ii = c.input(x), c.input(idx)
        c.node("TakeAlongAxisNode", x=ix, indices=ii, out=c.output(mx.take_along_axis(x, idx, axis)), axis=axis)
        return c

    x = d.floats((3, 4))
    return [
        case("axis0", x, d.ints((2, 4), mx.int32, 0, 3), 0),
        case("axis_neg1", x, d.ints((3, 2), mx.int32, 0, 4), -1),
        case("broadcast_indices", x, d.ints((1, 5), mx.int64, 0, 4), 1),
        case("negative_indices", x, d.ints((3, 2), mx.int32, -4, 0), 1),
        case("uint32_indices_3d", d.floats((2, 3, 4)), d.ints((2, 3, 1), mx.uint32, 0, 4), 2),
        case("empty", x, d.ints((3, 0), mx.int32, 0, 4), 1),
    ] + take_along_axis_gpu_shape_cases(case)


def take_along_axis_gpu_shape_cases(case):
    """Odd sizes, negative int64 indices, f16, rows that the GPU copies as vec4."""
    d = Data("TakeAlongAxisGpuShapes")
    return [
        case("odd_sizes_negative_int64", d.floats((37, 129)), d.ints((37, 5), mx.int64, -129, 129), 1),
        case("axis0_broadcast_x_f16", d.floats((1, 6, 3), mx.float16), d.ints((4, 6, 3), mx.int32, -1, 1), 0),
        case("rows_vec4_axis0", d.floats((50, 16)), d.ints((7, 16), mx.int32, -50, 50), 0),
        case("rows_vec4_broadcast_indices", d.floats((30, 8)), d.ints((9, 1), mx.int64, -30, 30), 0),
    ]


def take_cases():
    d = Data("Take")
    x = d.floats((4, 5))
    out = []
    for name, index, axis in (("literal", 2, 0), ("negative_literal", -1, 1), ("literal_axis_neg", 3, -1)):
        # The runtime wraps a scalar index itself (MLX's take wants it in range).
        out.append(simple(name, "TakeNode", x, mx.take(x, index % x.shape[axis], axis), index={"literal": index},
                          axis=axis))
    c = Case("from_value")
    ix, v = c.input(x), c.int_input(-2)
    c.node("TakeNode", x=ix, out=c.output(mx.take(x, 2, 0)), index={"vid": v, "kind": 1}, axis=0)
    out.append(c)
    for name, idx, axis in (("tensor_int32", d.ints((3,), mx.int32, 0, 4), 0),
                            ("tensor_2d_int64", d.ints((2, 2), mx.int64, 0, 5), 1),
                            ("tensor_negative", d.ints((3,), mx.int32, -5, 0), -1),
                            ("tensor_empty", d.ints((0,), mx.int32, 0, 4), 0)):
        c = Case(name)
        ix, ii = c.input(x), c.input(idx)
        c.node("TakeNode", x=ix, out=c.output(mx.take(x, idx, axis)), index={"tid": ii, "kind": 2}, axis=axis)
        out.append(c)
    emb = d.ints((6, 4), mx.uint32, 0, 2**31)
    c = Case("embedding_rows_uint32")
    ix, ii = c.input(emb), c.input(mx.array([[5, 0], [2, 2]], mx.int32))
    c.node("TakeNode", x=ix, out=c.output(mx.take(emb, mx.array([[5, 0], [2, 2]]), 0)),
           index={"tid": ii, "kind": 2}, axis=0)
    return out + [c] + take_gpu_shape_cases()


def take_gpu_shape_cases():
    """Embedding lookups (rows copied as vec4 on the GPU) and odd sizes, negative ids."""
    d = Data("TakeGpuShapes")
    out = []
    for name, x, idx, axis in (
            ("embedding_1000x64_int64_ids", d.floats((1000, 64)), mx.array([[17, 999, -1], [0, -1000, 512]], mx.int64), 0),
            ("embedding_f16_odd_dim", d.floats((257, 13), mx.float16), mx.array([3, -2, 256, 3, 0], mx.int64), 0),
            ("odd_sizes_middle_axis", d.floats((3, 37, 5)), d.ints((2, 3), mx.int32, -37, 37), 1),
            ("last_axis_negative_int64", d.floats((5, 129)), d.ints((11,), mx.int64, -129, 129), -1),
            ("int32_rows_vec4", d.ints((9, 8), mx.int32, -50, 50), mx.array([8, -9, 4], mx.int32), 0)):
        c = Case(name)
        ix, ii = c.input(x), c.input(idx)
        c.node("TakeNode", x=ix, out=c.output(mx.take(x, idx, axis)), index={"tid": ii, "kind": 2}, axis=axis)
        out.append(c)
    x = d.floats((6, 12), mx.float16)
    out.append(simple("literal_row_f16", "TakeNode", x, mx.take(x, 3, 0), index={"literal": -3}, axis=0))
    return out


def squeeze_cases():
    d = Data("Squeeze")
    x = d.floats((1, 3, 1, 2))
    return [
        simple("all", "SqueezeNode", x, mx.squeeze(x)),
        simple("one_axis", "SqueezeNode", x, mx.squeeze(x, 2), dims=[2]),
        simple("negative_axes", "SqueezeNode", x, mx.squeeze(x, [-4, -2]), dims=[-4, -2]),
        simple("non_unit_axis_ignored", "SqueezeNode", x, mx.squeeze(x, 0), dims=[0, 1]),
        simple("only_non_unit_is_noop", "SqueezeNode", x, x, dims=[1]),
        simple("empty_dim", "SqueezeNode", d.floats((0, 1)), mx.zeros((0,)), dims=[1]),
    ]


def split_cases():
    d = Data("Split")
    out = []
    for name, shape, sizes, axis in (("chunks", (10, 2), [3], 0), ("chunks_even", (2, 8), [4], -1),
                                     ("sizes", (3, 7), [2, 4, 1], 1), ("sizes_with_zero", (5,), [2, 0, 3], 0),
                                     ("chunk_larger_than_dim", (2, 3), [5], 1)):
        x = d.floats(shape)
        if len(sizes) == 1:
            points = list(range(sizes[0], shape[axis], sizes[0]))
        else:
            points = list(np.cumsum(sizes[:-1]))
        parts = mx.split(x, [int(p) for p in points], axis)
        c = Case(name)
        ix = c.input(x)
        c.node("SplitNode", x=ix, outs=[c.output(p) for p in parts], sizes=[iv(s) for s in sizes], axis=axis)
        out.append(c)
    return out


def broadcast_to_cases():
    d = Data("BroadcastTo")
    out = []
    for name, shape, target in (("add_dims", (3,), [2, 4, 3]), ("expand_ones", (2, 1), [2, 5]),
                                ("minus_one_keeps", (2, 1), [3, -1, 4]), ("empty", (1, 3), [0, 3]),
                                ("same", (2, 2), [2, 2])):
        x = d.floats(shape)
        real = [x.shape[i - (len(target) - x.ndim)] if t == -1 else t for i, t in enumerate(target)]
        out.append(simple(name, "BroadcastToNode", x, mx.broadcast_to(x, real), shape=[iv(t) for t in target]))
    c = Case("shape_from_value")
    x = d.ints((1, 2), mx.int16)
    ix, v = c.input(x), c.int_input(4)
    c.node("BroadcastToNode", x=ix, out=c.output(mx.broadcast_to(x, [4, 2])), shape=[iv(v), iv(2)])
    return out + [c]


def pad_cases():
    d = Data("Pad")
    out = []
    for name, x, widths, mode, value in (
            ("constant_zero", d.floats((2, 3)), [1, 2, 0, 1], "constant", 0.0),
            ("constant_value", d.floats((3,)), [2, 1], "constant", -1.5),
            ("constant_int", d.ints((2, 2), mx.int32), [1, 1, 1, 1], "constant", 7.9),
            ("edge", d.floats((2, 3)), [2, 1, 1, 3], "edge", 0.0),
            ("edge_f16_3d", d.floats((1, 2, 2), mx.float16), [0, 0, 1, 1, 2, 0], "edge", 0.0),
            ("empty_input_constant", d.floats((0, 2)), [1, 1, 0, 0], "constant", 3.0),
            ("bf16_constant", d.floats((4,), mx.bfloat16), [0, 3], "constant", 0.1)):
        pairs = [(widths[i], widths[i + 1]) for i in range(0, len(widths), 2)]
        expected = mx.pad(x, pairs, mode=mode, constant_values=mx.array(value, mx.float32))
        out.append(simple(name, "PadNode", x, expected, pad_width=[iv(w) for w in widths], mode=mode,
                          constant_value=value))
    return out


def reshape_cases():
    d = Data("Reshape")
    x = d.floats((2, 3, 4))
    out = [simple(n, "ReshapeNode", x, x.reshape(s), shape=[iv(v) for v in s])
           for n, s in (("flatten", [24]), ("infer", [4, -1]), ("add_ones", [1, 2, 1, 12]), ("infer_first", [-1, 3, 2]))]
    out.append(simple("empty", "ReshapeNode", d.floats((0, 4)), mx.zeros((2, 0, 2)), shape=[iv(2), iv(0), iv(2)]))
    c = Case("from_value_dynamic")
    ix, v = c.input(x, dynamic_dims=[0]), c.int_input(6)
    c.node("ReshapeNode", x=ix, out=c.output(x.reshape(6, 4)), shape=[iv(v), iv(-1)])
    return out + [c]


def transpose_cases():
    d = Data("Transpose")
    return [simple(f"perm_{'_'.join(map(str, p))}".replace("-", "m"), "TransposeNode", x, mx.transpose(x, p), perm=p)
            for x, p in ((d.floats((2, 3)), [1, 0]), (d.floats((2, 3, 4)), [2, 0, 1]),
                         (d.ints((2, 1, 3), mx.int8), [0, 2, 1]), (d.floats((2, 3, 4)), [-1, -3, -2]),
                         (d.floats((0, 3)), [1, 0]))] + [
        # Matrix transposes larger than one 32 x 32 tile, with partial tiles (the tiled variant).
        simple(name, "TransposeNode", x, mx.transpose(x, p), perm=p)
        for name, x, p in (("tiles_f32", d.floats((33, 70)), [1, 0]),
                           ("tiles_batched_f16", d.floats((2, 3, 37, 65), mx.float16), [0, 1, 3, 2]),
                           ("tiles_int8", d.ints((3, 40, 5), mx.int8), [0, 2, 1]))]


def as_strided_cases():
    d = Data("AsStrided")
    out = []
    for name, shape, strides, offset in (("windows", [3, 4], [2, 1], 0), ("zero_stride", [2, 3], [0, 1], 1),
                                         ("offset", [2, 2], [3, 1], 5), ("scalar", [], [], 7)):
        x = d.floats((12,))
        out.append(simple(name, "AsStridedNode", x, mx.as_strided(x, shape, strides, offset),
                          shape=[iv(s) for s in shape], strides=[iv(s) for s in strides], offset=offset))
    # A transposed input: MLX flattens it row-major first.
    c = Case("transposed_input_is_flattened")
    x = d.floats((3, 4))
    ix, t = c.input(x), c.temp()
    c.node("TransposeNode", x=ix, out=t, perm=[1, 0])
    c.node("AsStridedNode", x=t, out=c.output(mx.as_strided(mx.transpose(x), [2, 3], [3, 1], 2)),
           shape=[iv(2), iv(3)], strides=[iv(3), iv(1)], offset=2)
    return out + [c]


def contiguous_cases():
    d = Data("Contiguous")
    out = []
    for name, x, perm in (("transposed", d.floats((3, 4)), [1, 0]), ("int8_3d", d.ints((2, 3, 2), mx.int8), [2, 1, 0]),
                          ("bf16", d.floats((2, 2), mx.bfloat16), [1, 0]), ("empty", d.floats((0, 3)), [1, 0]),
                          ("identity", d.floats((5,)), [0])):
        c = Case(name)
        ix, t = c.input(x), c.temp()
        c.node("TransposeNode", x=ix, out=t, perm=perm)
        c.node("ContiguousNode", x=t, out=c.output(mx.contiguous(mx.transpose(x, perm))))
        out.append(c)
    return out


def gather_reference(x, indices, axes, slice_sizes):
    """MLX's gather(x, indices, axes, slice_sizes) through MLX advanced indexing: every output
    element reads x[start + offset], start from the indices on `axes` and 0 elsewhere."""
    batch = mx.broadcast_arrays(*indices)[0].shape if len(indices) > 1 else indices[0].shape
    nb, ns = len(batch), len(slice_sizes)
    coords = []
    for dim, size in enumerate(slice_sizes):
        offset = mx.arange(size).reshape([1] * nb + [size if k == dim else 1 for k in range(ns)])
        if dim in axes:
            start = indices[axes.index(dim)]
            start = mx.where(start < 0, start + x.shape[dim], start)
            start = mx.broadcast_to(start, batch).reshape(list(batch) + [1] * ns)
            offset = offset + start
        coords.append(offset)
    return x[tuple(coords)]


def gather_cases():
    d = Data("Gather")
    out = []
    for name, shape, idx_specs, axes, sizes in (
            ("one_axis_rows", (5, 3), [(4,)], [0], [1, 3]),
            ("two_axes", (4, 5, 2), [(3,), (3,)], [0, 1], [1, 1, 2]),
            ("broadcast_indices", (4, 6), [(2, 1), (1, 3)], [0, 1], [1, 2]),
            ("negative_indices", (5, 3), [(2,)], [0], [1, 2]),
            ("scalar_index", (3, 4), [()], [1], [3, 1])):
        x = d.floats(shape)
        indices = []
        for spec, a in zip(idx_specs, axes):
            hi = shape[a] - sizes[a] + 1
            lo = -hi + 1 if name == "negative_indices" else 0
            indices.append(d.ints(spec, mx.int32, lo, hi) if spec else mx.array(1, mx.int32))
        out.append(gather_case(name, x, indices, axes, sizes))
    return out + gather_gpu_shape_cases()


def gather_case(name, x, indices, axes, sizes):
    c = Case(name)
    ix = c.input(x)
    iis = [c.input(i) for i in indices]
    c.node("GatherNode", x=ix, indices=iis, out=c.output(gather_reference(x, indices, axes, sizes)),
           axes=axes, slice_sizes=sizes)
    return c


def gather_gpu_shape_cases():
    """An embedding-style gather (rows as vec4 on the GPU), int64 and negative indices, odd sizes."""
    d = Data("GatherGpuShapes")
    out = []
    for name, x, indices, axes, sizes in (
            ("embedding_rows_int64", d.floats((1000, 64)), [mx.array([[5, -1], [999, -1000]], mx.int64)], [0], [1, 64]),
            ("three_axes_odd_f16", d.floats((5, 7, 9), mx.float16),
             [d.ints((3, 1), mx.int32, -5, 5), d.ints((1, 4), mx.int32, -7, 7), d.ints((4,), mx.int32, 0, 7)],
             [0, 1, 2], [1, 1, 3]),
            ("partial_rows_vec4", d.floats((6, 12)), [d.ints((5,), mx.int32, 0, 3)], [1], [6, 8])):
        out.append(gather_case(name, x, indices, axes, sizes))
    return out


def slice_cases():
    d = Data("Slice")
    x = d.floats((6, 5))
    out = []
    for name, axis, start, stop, step in (("basic", 0, 1, 4, 1), ("negative_bounds", 1, -4, -1, 1),
                                          ("step2", 0, 0, 6, 2), ("negative_step", 1, 4, 0, -1),
                                          ("clamped", 0, -100, 100, 1), ("empty", 0, 4, 2, 1),
                                          ("to_end_sentinel", 1, 2, 2**63 - 1, 1), ("reverse_all", 0, -1, -(2**31) - 5, -1)):
        sl = [slice(None)] * 2
        clamp = lambda v: max(-(2**31), min(2**31 - 1, v))  # IntOrVid literals clamp to int32
        sl[axis] = slice(clamp(start), clamp(stop), step)
        out.append(simple(name, "SliceNode", x, x[tuple(sl)], axis=iv(axis), start=iv(start), stop=iv(stop), step=step))
    c = Case("start_from_value")
    ix, v = c.input(x), c.int_input(2)
    c.node("SliceNode", x=ix, out=c.output(x[:, 2:4]), axis=iv(-1), start=iv(v), stop=iv(4))
    return out + [c]


def concatenate_cases():
    d = Data("Concatenate")

    def case(name, parts, axis):
        c = Case(name)
        refs = [c.input(p) for p in parts]
        c.node("ConcatenateNode", tensors=refs, out=c.output(mx.concatenate(parts, axis)), axis=axis)
        return c

    return [
        case("axis0", [d.floats((2, 3)), d.floats((1, 3))], 0),
        case("axis_neg1_three", [d.floats((2, 1)), d.floats((2, 3)), d.floats((2, 2))], -1),
        case("mixed_dtypes", [d.ints((2,), mx.int32), d.floats((3,))], 0),
        case("with_empty", [d.floats((0, 2)), d.floats((2, 2))], 0),
        case("single", [d.ints((2, 2), mx.int8)], 1),
    ]


def stack_cases():
    d = Data("Stack")

    def case(name, parts, axis):
        c = Case(name)
        refs = [c.input(p) for p in parts]
        c.node("StackNode", tensors=refs, out=c.output(mx.stack(parts, axis)), axis=axis)
        return c

    return [
        case("axis0", [d.floats((2, 3)), d.floats((2, 3))], 0),
        case("axis_last", [d.floats((2,)), d.floats((2,)), d.floats((2,))], 1),
        case("axis_neg", [d.floats((2, 3)), d.floats((2, 3))], -2),
        case("mixed_dtypes", [d.ints((2,), mx.int32), d.floats((2,), mx.float16)], 0),
        case("empty", [d.floats((0,)), d.floats((0,))], 0),
    ]


def full_cases():
    out = []
    for name, shape, v, dtype in (("f32", [2, 3], 1.5, mx.float32), ("int32_truncates", [4], 7.9, mx.int32),
                                  ("f16", [3, 1], 0.1, mx.float16), ("bool", [2], 2.0, mx.bool_),
                                  ("empty", [0, 3], 1.0, mx.float32), ("bf16", [2], -3.3, mx.bfloat16)):
        c = Case(name)
        # ExecuTorch calls full(shape, float v, dtype): v goes through float32, then dtype.
        expected = mx.full(shape, mx.array(v, mx.float32).astype(dtype))
        c.node("FullNode", out=c.output(expected), shape=[iv(s) for s in shape],
               v=fv(v), scalar_type=scalar_type(dtype))
        out.append(c)
    c = Case("shape_from_value")
    n = c.int_input(3)
    c.node("FullNode", out=c.output(mx.full([3, 2], mx.array(2, mx.int8))), shape=[iv(n), iv(2)], v=fv(2.0),
           scalar_type=scalar_type(mx.int8))
    return out + [c]


def full_like_cases():
    d = Data("FullLike")
    out = []
    for name, x, v, dtype in (("same_dtype", d.floats((2, 3)), 2.5, None), ("int_input", d.ints((3,), mx.int16), -4.7, None),
                              ("to_f16", d.floats((2,)), 0.3, mx.float16), ("to_bool", d.floats((2, 2)), 0.0, mx.bool_),
                              ("empty", d.floats((0,)), 1.0, None)):
        kw = {} if dtype is None else {"scalar_type": scalar_type(dtype)}
        expected = mx.full(x.shape, mx.array(v, mx.float32).astype(dtype or x.dtype))
        out.append(simple(name, "FullLikeNode", x, expected, v=fv(v), **kw))
    return out


def arange_cases():
    out = []
    for name, start, stop, step, dtype in (("int64", 0, 5, 1, mx.int64), ("default_int32", 2, 11, 3, None),
                                           ("negative_step", 5, -3, -2, mx.int32), ("empty", 4, 1, 1, mx.int32),
                                           ("f32", -2, 3, 1, mx.float32), ("f16_step", 1, 10, 4, mx.float16)):
        c = Case(name)
        kw = {} if dtype is None else {"scalar_type": scalar_type(dtype)}
        expected = mx.arange(start, stop, step, dtype) if dtype else mx.arange(start, stop, step)
        c.node("ARangeNode", out=c.output(expected), start=iv(start), stop=iv(stop), step=iv(step), **kw)
        out.append(c)
    c = Case("stop_from_value")
    v = c.int_input(4)
    c.node("ARangeNode", out=c.output(mx.arange(0, 4, 1, mx.int64)), start=iv(0), stop=iv(v), step=iv(1),
           scalar_type=scalar_type(mx.int64))
    return out + [c]


def slice_update_cases():
    d = Data("SliceUpdate")
    out = []
    for name, shape, axis, start, stop, step, ushape, dtype in (
            ("basic", (6, 3), 0, 1, 3, 1, (2, 3), mx.float32),
            ("negative_bounds", (4, 5), 1, -3, -1, 1, (4, 2), mx.float32),
            ("step2", (7,), 0, 1, 7, 2, (3,), mx.float32),
            ("broadcast_update", (3, 4), 1, 0, 2, 1, (1, 2), mx.float32),
            ("start_equals_stop_noop", (3, 2), 0, 2, 2, 1, (1, 2), mx.float32),
            ("clamped_stop", (5, 2), 0, 3, 100, 1, (2, 2), mx.float32),
            ("update_cast", (2, 4), 1, 1, 3, 1, (2, 2), mx.float16)):
        x = d.floats(shape)
        u = d.floats(ushape, dtype)
        dim = shape[axis]
        s0 = max(0, min(start + dim if start < 0 else start, dim))
        s1 = max(0, min(stop + dim if stop < 0 else stop, dim))
        expected = mx.array(x)
        if s0 != s1:
            idx = [slice(None)] * len(shape)
            idx[axis] = slice(s0, s1, step)
            expected[tuple(idx)] = u
        c = Case(name)
        ix, iu = c.input(x), c.input(u)
        c.node("SliceUpdateNode", dst=ix, update=iu, out=c.output(expected), axis=iv(axis), start=iv(start),
               stop=iv(stop), step=step)
        out.append(c)
    return out


def index_copy_cases():
    d = Data("IndexCopy")
    out = []
    for name, shape, axis, indices in (("runs", (6, 2), 0, [1, 2, 3, 5]), ("negative", (4, 3), 1, [-1, 0]),
                                       ("reversed", (5,), 0, [3, 2, 1]), ("empty_indices", (3, 2), 0, []),
                                       ("3d_axis_neg", (2, 4, 2), -2, [0, 3])):
        x = d.floats(shape)
        ushape = list(shape)
        ushape[axis] = len(indices)
        u = d.floats(ushape)
        expected = mx.array(x)
        for j, i in enumerate(indices):
            src = [slice(None)] * len(shape)
            dst = [slice(None)] * len(shape)
            src[axis], dst[axis] = j, i
            expected[tuple(dst)] = u[tuple(src)]
        c = Case(name)
        ix, iu, ii = c.input(x), c.input(u), c.input(mx.array(indices, mx.int64))
        c.node("IndexCopyNode", dst=ix, update=iu, indices=ii, out=c.output(expected), axis=axis)
        out.append(c)
    return out


def tri_cases():
    out = []
    for name, n, m, k, dtype in (("square", 4, 4, 0, mx.float32), ("wide_k1", 3, 5, 1, mx.int32),
                                 ("tall_kneg", 5, 2, -2, mx.bool_), ("empty", 0, 3, 0, mx.float32),
                                 ("f16", 2, 3, -1, mx.float16)):
        c = Case(name)
        c.node("TriNode", out=c.output(mx.tri(n, m, k, dtype)), n=iv(n), m=iv(m), k=k, scalar_type=scalar_type(dtype))
        out.append(c)
    c = Case("size_from_value")
    v = c.int_input(3)
    c.node("TriNode", out=c.output(mx.tri(3, 3, 0, mx.float32)), n=iv(v), m=iv(v), scalar_type=scalar_type(mx.float32))
    return out + [c]


def tril_triu_cases(kind, fn):
    d = Data(kind)
    return [simple(name, kind, x, fn(x, k), k=k) for name, x, k in (
        ("k0", d.floats((4, 4)), 0), ("k1_wide", d.floats((3, 5)), 1), ("kneg_batched", d.floats((2, 4, 3)), -1),
        ("int8", d.ints((3, 3), mx.int8), 0), ("bool", d.ints((3, 2), mx.bool_), 1), ("empty", d.floats((0, 3)), 0))]


def repeat_cases():
    d = Data("Repeat")
    out = [simple(name, "RepeatNode", x, mx.repeat(x, r, axis), repeats=iv(r), axis=axis) for name, x, r, axis in (
        ("axis0", d.floats((2, 3)), 2, 0), ("axis_neg", d.floats((2, 3)), 3, -1), ("zero", d.floats((2, 2)), 0, 1),
        ("int8", d.ints((3,), mx.int8), 1, 0), ("empty", d.floats((0, 2)), 2, 0))]
    c = Case("repeats_from_value")
    x = d.floats((2,))
    ix, v = c.input(x), c.int_input(2)
    c.node("RepeatNode", x=ix, out=c.output(mx.repeat(x, 2, 0)), repeats=iv(v), axis=0)
    return out + [c]


def roll_cases():
    d = Data("Roll")
    out = [simple(name, "RollNode", x, mx.roll(x, s, a), shift=[iv(v) for v in s], axes=a) for name, x, s, a in (
        ("one_axis", d.floats((5,)), [2], [0]), ("negative_shift", d.floats((3, 4)), [-1], [1]),
        ("two_axes", d.floats((3, 4)), [1, 5], [0, 1]), ("shift_beyond_dim", d.floats((2, 3)), [7], [-1]),
        ("empty", d.floats((0, 3)), [1], [1]))]
    c = Case("shift_from_value")
    x = d.floats((4,))
    ix, v = c.input(x), c.int_input(3)
    c.node("RollNode", x=ix, out=c.output(mx.roll(x, 3, 0)), shift=[iv(v)], axes=[0])
    return out + [c]


def flip_cases():
    d = Data("Flip")

    def flip(x, axes):
        index = [slice(None)] * x.ndim
        for a in axes:
            index[a] = slice(None, None, -1)
        return x[tuple(index)]

    return [simple(name, "FlipNode", x, flip(x, axes), axes=axes) for name, x, axes in (
        ("axis0", d.floats((3, 2)), [0]), ("both", d.floats((2, 3)), [0, 1]), ("negative", d.floats((2, 3, 2)), [-1]),
        ("int8", d.ints((4,), mx.int8), [0]), ("empty", d.floats((0, 2)), [0]))]


def scatter_add_cases():
    d = Data("ScatterAdd")
    out = []
    for name, xshape, ishape, axis, dtype in (("axis0_duplicates", (3, 4), (5, 4), 0, mx.float32),
                                              ("axis1", (2, 5), (2, 3), 1, mx.float32),
                                              ("axis_neg_int32", (2, 3, 4), (2, 3, 6), -1, mx.int32),
                                              ("smaller_indices", (4, 3), (2, 2), 0, mx.float32),
                                              ("f16", (3, 2), (3, 2), 0, mx.float16)):
        x = d.any(xshape, dtype)
        a = axis % len(xshape)
        idx = d.ints(ishape, mx.int32, 0, xshape[a])
        upd = d.any(ishape, dtype)
        coords = list(np.indices(ishape))
        coords[a] = np.array(idx)
        expected = x.at[tuple(mx.array(c_.astype(np.int32)) for c_ in coords)].add(upd)
        c = Case(name)
        ix, ii, iu = c.input(x), c.input(idx), c.input(upd)
        c.node("ScatterAddNode", x=ix, indices=ii, updates=iu, out=c.output(expected), axis=axis)
        out.append(c)
    return out + scatter_add_gpu_shape_cases()


def scatter_add_gpu_shape_cases():
    """Many duplicates, negative int64 indices, broadcast updates, odd sizes, f16."""
    d = Data("ScatterAddGpuShapes")
    out = []
    for name, xshape, ishape, ushape, axis, dtype in (
            ("duplicates_negative_int64", (7, 33), (40, 33), (40, 33), 0, mx.float32),
            ("odd_f16_axis1", (5, 9, 3), (4, 20, 3), (4, 20, 3), 1, mx.float16),
            ("broadcast_updates_uint32", (6, 10), (6, 25), (1, 25), -1, mx.uint32)):
        x = d.any(xshape, dtype)
        a = axis % len(xshape)
        idx = d.ints(ishape, mx.int64, -xshape[a], xshape[a])
        upd = d.any(ushape, dtype)
        coords = list(np.indices(ishape))
        coords[a] = np.array(idx) % xshape[a]
        expected = x.at[tuple(mx.array(c_.astype(np.int32)) for c_ in coords)].add(mx.broadcast_to(upd, ishape))
        c = Case(name)
        ix, ii, iu = c.input(x), c.input(idx), c.input(upd)
        c.node("ScatterAddNode", x=ix, indices=ii, updates=iu, out=c.output(expected), axis=axis)
        out.append(c)
    return out


def cases():
    return {
        "ExpandDimsNode": expand_dims_cases(),
        "TileNode": tile_cases(),
        "TakeAlongAxisNode": take_along_axis_cases(),
        "TakeNode": take_cases(),
        "SqueezeNode": squeeze_cases(),
        "SplitNode": split_cases(),
        "BroadcastToNode": broadcast_to_cases(),
        "PadNode": pad_cases(),
        "ReshapeNode": reshape_cases(),
        "TransposeNode": transpose_cases(),
        "AsStridedNode": as_strided_cases(),
        "ContiguousNode": contiguous_cases(),
        "GatherNode": gather_cases(),
        "SliceNode": slice_cases(),
        "ConcatenateNode": concatenate_cases(),
        "StackNode": stack_cases(),
        "FullNode": full_cases(),
        "FullLikeNode": full_like_cases(),
        "ARangeNode": arange_cases(),
        "SliceUpdateNode": slice_update_cases(),
        "IndexCopyNode": index_copy_cases(),
        "TriNode": tri_cases(),
        "TrilNode": tril_triu_cases("TrilNode", mx.tril),
        "TriuNode": tril_triu_cases("TriuNode", mx.triu),
        "RepeatNode": repeat_cases(),
        "RollNode": roll_cases(),
        "FlipNode": flip_cases(),
        "ScatterAddNode": scatter_add_cases(),
    }
