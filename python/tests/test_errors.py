# SPDX-License-Identifier: Apache-2.0
"""Errors become exceptions carrying the library's message and status; the runtime stays
usable after each."""
import gc
import os
import weakref

import numpy as np
import pytest

import kernelport as kp


def axpy_works(rt):
    x = rt.buffer(np.ones(3, np.float32))
    y = rt.zeros(3)
    rt.kernel("example.axpy")(n=3, alpha=2.0, x=x, y=y)
    np.testing.assert_array_equal(y.numpy(), [2, 2, 2])


def test_unknown_kernel(rt):
    with pytest.raises(kp.NotFoundError) as e:
        rt.kernel("gru.stpe")
    assert isinstance(e.value, LookupError) and isinstance(e.value, kp.Error)
    assert e.value.status == -2 and e.value.name == "KP_ERR_NOT_FOUND"
    assert "gru.stpe" in str(e.value) and "gru.step" in e.value.message  # the near names
    axpy_works(rt)


def test_wrong_shape_names_the_kernel_and_argument(rt):
    a, b = rt.zeros((4, 3)), rt.zeros((5, 2))
    with pytest.raises(kp.InvalidArgumentError) as e:
        kp.blas.gemm(a, b)
    assert isinstance(e.value, ValueError)
    assert e.value.name == "KP_ERR_INVALID_ARG" and e.value.status == -1
    assert "blas.gemm" in e.value.message
    with pytest.raises(kp.InvalidArgumentError, match=r"kernel gru\.step: w_hh: expected"):
        kp.gru.step(rt.zeros((2, 3)), rt.zeros((2, 4)), rt.zeros((12, 3)), rt.zeros((12, 5)))
    axpy_works(rt)


def test_unknown_and_missing_arguments(rt):
    k = rt.kernel("example.axpy")
    x = rt.zeros(3)
    with pytest.raises(kp.InvalidArgumentError, match=r'unknown argument "z" \(parameters: n'):
        k(n=3, x=x, y=x, z=1)
    with pytest.raises(kp.InvalidArgumentError, match='missing argument "y"'):
        k(n=3, x=x)
    axpy_works(rt)


def test_python_types_are_checked(rt):
    k = rt.kernel("example.axpy")
    y = rt.zeros(3)
    with pytest.raises(TypeError, match=r'example\.axpy: argument "x": expected a kernelport'):
        k(n=3, x=np.zeros(3, np.float32), y=y)
    with pytest.raises(TypeError, match='argument "n": expected an int, got float'):
        k(n=3.0, x=y, y=y)
    with pytest.raises(TypeError, match='argument "alpha": expected a float'):
        k(n=3, alpha="2", x=y, y=y)
    with pytest.raises(TypeError, match="keyword arguments only"):
        k(3)
    k(n=np.int64(3), alpha=np.float32(1), x=rt.zeros(3), y=y)  # NumPy scalars convert


def test_bad_device_and_manifest(tmp_path):
    with pytest.raises(kp.NoDeviceError) as e:
        kp.Runtime(device="no-such-device-28")
    assert "no-such-device-28" in e.value.message
    bad = tmp_path / "bad.yaml"
    bad.write_text("kernelport: 1\ndevices: []\n")
    with pytest.raises(kp.ManifestError, match=r"bad\.yaml:2:1: error"):
        kp.Runtime(manifest=str(bad))


def test_closed_runtime(rng):
    rt = kp.Runtime(device="host")
    k = rt.kernel("example.axpy")
    y = rt.zeros(2)
    rt.close()
    assert rt.closed
    with pytest.raises(kp.InvalidArgumentError, match="closed"):
        y.numpy()
    with pytest.raises(kp.InvalidArgumentError, match="closed"):
        k(n=2, x=y, y=y)
    rt.close()  # twice is fine


def test_plugin_dirs_and_flags(rt):
    plugin = rt.kernel("example.axpy").info().plugin_path
    with kp.Runtime(device="host", flags=kp.NO_INSTALLED_PLUGINS | kp.NO_ENV) as bare:
        assert not bare.plugins()
        with pytest.raises(kp.NotFoundError):
            bare.kernel("example.axpy")
    dirs = [os.path.dirname(plugin)]
    with kp.Runtime(device="host", plugin_dirs=dirs, flags=kp.NO_INSTALLED_PLUGINS) as one:
        assert one.kernel("example.axpy").info().plugin_path == plugin
    with pytest.raises(TypeError, match="list of directories"):
        kp.Runtime(plugin_dirs=dirs[0])


def test_a_dropped_runtime_is_freed():
    rt = kp.Runtime(device="host")
    k = rt.kernel("example.axpy")  # cached by the runtime, and keeping it alive: a cycle
    y = rt.zeros(2)
    k(n=2, x=rt.zeros(2), y=y)
    alive = weakref.ref(rt)
    del rt, k, y
    gc.collect()
    assert alive() is None
