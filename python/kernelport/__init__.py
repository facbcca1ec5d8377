# SPDX-License-Identifier: Apache-2.0
"""Kernelport for Python: OpenCL kernels from plugins, each checked against its host reference,
with NumPy arrays in and out.

    import numpy as np, kernelport as kp
    rt = kp.Runtime()
    a = rt.buffer(np.random.rand(64, 32).astype(np.float32))
    b = rt.buffer(np.random.rand(32, 16).astype(np.float32))
    c = kp.blas.gemm(a, b)              # a typed helper, or any kernel by name:
    rt.kernel("tensor.relu")(x=c, y=c)  # keyword arguments, converted by the kernel's parameters
    print(c.numpy())

kernelport.solve fits residuals written as expressions (Levenberg-Marquardt, many small problems
or one large sparse one) on the host reference or a runtime's device.

Errors raise kernelport.Error (a subclass per status, such as InvalidArgumentError, also a
ValueError) carrying the library's message, the status and its name.
"""
import numpy as np

from . import _kernelport
from ._buffer import Buffer, bf16_from_float32, bf16_to_float32, dtype_of, host_data
from ._kernelport import (
    BuildError,
    Error,
    InputOutputError,
    InternalError,
    InvalidArgumentError,
    Kernel,
    ManifestError,
    NoDeviceError,
    NotFoundError,
    OpenCLError,
    OutOfMemoryError,
    PluginError,
    Prepared,
    UnsupportedError,
    VerifyError,
)
from ._results import (
    BenchResult,
    DeviceInfo,
    KernelInfo,
    ManifestLayer,
    ParamInfo,
    PluginRecord,
    SparseProgress,
    Tunable,
    VerifyResult,
)

__version__ = _kernelport.version()

# kp_runtime_create's flags (Runtime(flags=...)).
NO_ENV = _kernelport.NO_ENV
NO_USER_MANIFESTS = _kernelport.NO_USER_MANIFESTS
NO_INSTALLED_PLUGINS = _kernelport.NO_INSTALLED_PLUGINS
NO_DISK_CACHE = _kernelport.NO_DISK_CACHE
NO_BUILTIN_TUNING = _kernelport.NO_BUILTIN_TUNING


class Runtime(_kernelport.Runtime):
    """A device with its plugins, kernels and caches (kp_runtime_create).

    Runtime(device=None, manifest=None, plugin_dirs=None, cache_dir=None, flags=0): `device` is a
    spec such as "pocl", "nvidia", "gpu:1", "host" (default: KP_DEVICE, else the manifest's
    rules); `manifest` a manifest file layered over the others; `plugin_dirs` directories
    scanned before the others. The plugins inside this package are found beside its library.
    Buffers and kernels keep their runtime alive; close() (or a with block) ends it at once.
    """

    def kernel(self, name):
        """The kernel `name` ("gru.step"), callable with keyword arguments. NotFoundError (its
        message suggests near names) when no plugin registers it."""
        kernels = self.__dict__.setdefault("_kernels", {})
        k = kernels.get(name)
        if k is None:
            k = kernels[name] = Kernel(self, name)
        return k

    def buffer(self, array, dtype=None):
        """A buffer holding a copy of `array` (any array-like), of `array`'s dtype or `dtype`
        ("f32", ...). float64 arrays are stored as f32, int64 as i32 and bool as u8."""
        a = np.asarray(array)
        dtype = dtype or dtype_of(a)
        data = host_data(a, dtype)
        buf = Buffer(self, _kernelport.DTYPES[dtype], data.shape)
        buf._write(data, 0)
        return buf

    def empty(self, shape, dtype="f32"):
        """An uninitialised contiguous buffer."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return Buffer(self, _kernelport.DTYPES[dtype], shape)

    def zeros(self, shape, dtype="f32"):
        """A contiguous buffer of zeros (every dtype's zero is all-zero bytes)."""
        buf = self.empty(shape, dtype)
        buf._fill(b"\0")
        return buf

    def device(self):
        """The device the runtime runs on, with `why` it was chosen."""
        return DeviceInfo(**self._device())

    def devices(self):
        """Every device the runtime enumerated (OpenCL devices, then the host device)."""
        return [DeviceInfo(**d) for d in self._devices()]

    def plugins(self):
        """The loaded plugins, in load order."""
        return [PluginRecord(**p) for p in self._plugins()]

    def rejected_plugins(self):
        """Plugins found but refused, with the reason."""
        return [PluginRecord(**p) for p in self._rejected_plugins()]

    def manifests(self):
        """The manifest layers read or looked for, in the order they apply."""
        return [ManifestLayer(**m) for m in self._manifests()]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self.closed:
            return "<kernelport.Runtime closed>"
        d = self.device()
        return f"<kernelport.Runtime {d.name} ({d.vendor} {d.type})>"


from . import blas, gru, logic, solve, tensor  # noqa: E402  (the helpers use Runtime and Buffer)

__all__ = [
    "Runtime",
    "Buffer",
    "Kernel",
    "Prepared",
    "Error",
    "InvalidArgumentError",
    "NotFoundError",
    "BuildError",
    "OpenCLError",
    "OutOfMemoryError",
    "ManifestError",
    "PluginError",
    "UnsupportedError",
    "InputOutputError",
    "VerifyError",
    "NoDeviceError",
    "InternalError",
    "KernelInfo",
    "ParamInfo",
    "Tunable",
    "VerifyResult",
    "BenchResult",
    "DeviceInfo",
    "PluginRecord",
    "ManifestLayer",
    "blas",
    "gru",
    "logic",
    "solve",
    "tensor",
    "SparseProgress",
    "bf16_from_float32",
    "bf16_to_float32",
]
