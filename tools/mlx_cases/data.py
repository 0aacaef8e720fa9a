"""Random and special test data as MLX arrays."""
import mlx.core as mx
import numpy as np

FLOATS = (mx.float32, mx.float16, mx.bfloat16)
NUMPY_INTS = {
    mx.uint8: np.uint8, mx.int8: np.int8, mx.int16: np.int16, mx.int32: np.int32,
    mx.int64: np.int64, mx.uint32: np.uint32,
}


class Data:
    """Deterministic data for one node's cases (seeded by the node name)."""

    def __init__(self, name):
        self.rng = np.random.RandomState(sum(map(ord, name)) * 7919 % (2**31))

    def floats(self, shape, dtype=mx.float32, lo=-2.0, hi=2.0):
        return mx.array(self.rng.uniform(lo, hi, shape).astype(np.float32)).astype(dtype)

    def ints(self, shape, dtype=mx.int32, lo=-5, hi=6):
        if dtype == mx.bool_:
            return mx.array(self.rng.rand(*shape) > 0.5)
        return mx.array(self.rng.randint(lo, hi, shape).astype(NUMPY_INTS[dtype]))

    def any(self, shape, dtype, lo=-2.0, hi=2.0):
        if dtype in FLOATS:
            return self.floats(shape, dtype, lo, hi)
        if dtype == mx.bool_:
            return self.ints(shape, mx.bool_)
        ilo = 0 if dtype in (mx.uint8, mx.uint32) else int(np.floor(lo))
        return self.ints(shape, dtype, ilo, max(int(np.ceil(hi)), ilo + 1) + 1)

    def choice(self, n, size, replace=True):
        return self.rng.choice(n, size, replace=replace)


def special_floats(dtype=mx.float32):
    """NaN, infinities, signed zeros and a few ordinary values."""
    return mx.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.25],
                    dtype=mx.float32).astype(dtype)
