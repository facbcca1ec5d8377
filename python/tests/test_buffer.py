# SPDX-License-Identifier: Apache-2.0
"""NumPy arrays in and out of buffers, of every dtype, and views."""
import numpy as np
import pytest

import kernelport as kp

SHAPES = [(), (1,), (7, 13), (2, 3, 5)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint32, np.uint8])
def test_round_trip(rt, rng, shape, dtype):
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    b = rt.buffer(a)
    assert b.shape == shape and b.dtype == kp.dtype_of(a) and b.nbytes >= a.nbytes
    out = b.numpy()
    assert out.dtype == a.dtype and out.shape == shape
    np.testing.assert_array_equal(out, a)


def test_wider_types_are_narrowed(rt):
    assert rt.buffer(np.array([1.5, 2.5])).dtype == "f32"
    b = rt.buffer(np.array([[1, -2]], dtype=np.int64))
    assert b.dtype == "i32"
    np.testing.assert_array_equal(b.numpy(), [[1, -2]])
    np.testing.assert_array_equal(rt.buffer([True, False]).numpy(), [1, 0])
    with pytest.raises(ValueError, match="do not fit i32"):
        rt.buffer(np.array([2**40]))
    with pytest.raises(TypeError, match="no dtype"):
        rt.buffer(np.array([1j]))


def test_bf16(rt):
    a = np.array([1.0, 1.00390625, 1.01171875, -3.5, np.inf, np.nan], np.float32)
    b = rt.buffer(a, dtype="bf16")
    assert b.dtype == "bf16"
    out = b.numpy()
    # 1 + 2^-8 is a tie: to even (1.0); 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
    np.testing.assert_array_equal(out[:5], [1.0, 1.0, 1.015625, -3.5, np.inf])
    assert np.isnan(out[5])
    bits = kp.bf16_from_float32(a)
    np.testing.assert_array_equal(rt.buffer(bits, dtype="bf16").numpy()[:5], out[:5])


def test_views(rt, rng):
    a = rng.standard_normal((5, 7), dtype=np.float32)
    b = rt.buffer(a)
    np.testing.assert_array_equal(b.T.numpy(), a.T)
    a3 = rng.standard_normal((2, 3, 4), dtype=np.float32)
    np.testing.assert_array_equal(rt.buffer(a3).T.numpy(), a3.T)
    np.testing.assert_array_equal(rt.buffer(a3).transpose(0, 2).numpy(), a3.transpose(2, 1, 0))
    assert not b.T.contiguous and b.T.strides == (1, 7)
    np.testing.assert_array_equal(b.narrow(1, 2, 3).numpy(), a[:, 2:5])
    np.testing.assert_array_equal(b.reshape(7, -1).numpy(), a.reshape(7, 5))
    flipped = b.reshape(35).view(strides=(-1,), offset=34)
    np.testing.assert_array_equal(flipped.numpy(), a.reshape(35)[::-1])
    row = b.narrow(0, 3, 1)
    row.write(np.full((1, 7), 9, np.float32))
    a[3] = 9
    np.testing.assert_array_equal(b.numpy(), a)
    assert row.describe() == "f32[1, 7] offset 21"


def test_view_outlives_its_owner(rt):
    b = rt.buffer(np.arange(6, dtype=np.float32))
    v = b.reshape(2, 3)
    del b
    np.testing.assert_array_equal(v.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_zeros_and_empty(rt):
    np.testing.assert_array_equal(rt.zeros((3, 4), "i32").numpy(), np.zeros((3, 4), np.int32))
    assert rt.empty(0).numpy().shape == (0,)
    assert rt.buffer(np.zeros((0, 3), np.float32)).numpy().shape == (0, 3)
    with pytest.raises(ValueError, match="shape"):
        rt.buffer(np.zeros((2, 2), np.float32)).write(np.zeros(4))
