# SPDX-License-Identifier: Apache-2.0
"""Buffer: device memory seen as a tensor, with NumPy conversion and views."""
import numpy as np

from . import _kernelport

# Kernelport's dtypes and the NumPy dtype their host data has. bf16 has no NumPy type: its
# buffers take and give float32 arrays (rounded to nearest even on the way in, widened exactly on
# the way out), or uint16 arrays of raw bits on the way in.
CODES = dict(_kernelport.DTYPES)
NAMES = {code: name for name, code in CODES.items()}
HOST = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "i32": np.dtype(np.int32),
    "u32": np.dtype(np.uint32),
    "u8": np.dtype(np.uint8),
    "bf16": np.dtype(np.uint16),
}
# NumPy dtypes with no Kernelport dtype of their own, and the one their arrays are stored as.
_NARROWED = {np.dtype(np.float64): "f32", np.dtype(np.int64): "i32", np.dtype(np.bool_): "u8"}


def dtype_of(array):
    """The Kernelport dtype name an array is stored as: its own, or f32 for float64, i32 for
    int64 and u8 for bool (the library has no 64-bit or boolean types)."""
    for name, host in HOST.items():
        if name != "bf16" and host == array.dtype:
            return name
    if array.dtype in _NARROWED:
        return _NARROWED[array.dtype]
    raise TypeError(f"kernelport has no dtype for NumPy's {array.dtype} (f32, f16, i32, u32, u8, bf16)")


def bf16_from_float32(a):
    """bfloat16 bits (uint16) of a float array, rounded to nearest even; NaN stays a NaN."""
    x = np.asarray(a, dtype=np.float32, order="C").view(np.uint32)
    rounded = (x + np.uint32(0x7FFF) + ((x >> 16) & np.uint32(1))) >> 16
    nan = (x & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(nan, (x >> 16) | np.uint32(0x40), rounded).astype(np.uint16)


def bf16_to_float32(bits):
    """float32 values of bfloat16 bits (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def host_data(array, dtype):
    """The C-contiguous host array holding `array`'s values as Kernelport dtype `dtype`."""
    a = np.asarray(array)
    if dtype == "bf16":
        return np.asarray(a, order="C") if a.dtype == np.uint16 else bf16_from_float32(a)
    host = HOST[dtype]
    if a.dtype != host and np.issubdtype(a.dtype, np.integer) and np.issubdtype(host, np.integer):
        converted = a.astype(host)
        if not np.array_equal(converted, a):
            raise ValueError(f"values of the {a.dtype} array do not fit {dtype}")
        return np.asarray(converted, order="C")
    # Not ascontiguousarray, which makes a 0-d array 1-d.
    return np.asarray(a, dtype=host, order="C")


class Buffer(_kernelport.Buffer):
    """Device memory seen as a tensor: dtype, shape, strides and offset (in elements). Views
    (reshape, transpose, narrow, flip) share the memory; the memory lives while any view does.
    Make one with Runtime.buffer, empty or zeros; pass it to kernels as a tensor argument."""

    __slots__ = ()

    @property
    def dtype(self):
        """The dtype's name: "f32", "f16", "i32", "u32", "u8" or "bf16"."""
        return NAMES[self._dtype_code]

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        """Elements in the view."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self):
        return HOST[self.dtype].itemsize

    def numpy(self):
        """The view's elements as a new NumPy array (float32 for bf16), after earlier launches."""
        host = HOST[self.dtype]
        if self.size == 0:
            out = np.empty(self.shape, dtype=host)
        elif self.contiguous:
            out = np.empty(self.shape, dtype=host)
            self._read(out, self.offset * host.itemsize)
        else:
            # The span the view touches, then NumPy's view of it with the same strides.
            low = self.offset + sum(min(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
            high = self.offset + sum(max(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
            span = np.empty(high - low + 1, dtype=host)
            self._read(span, low * host.itemsize)
            out = np.ndarray(
                self.shape,
                dtype=host,
                buffer=span,
                offset=(self.offset - low) * host.itemsize,
                strides=tuple(s * host.itemsize for s in self.strides),
            ).copy()
        return bf16_to_float32(out) if self.dtype == "bf16" else out

    def write(self, array):
        """Copies `array` (its shape must be the view's; converted to the view's dtype) into a
        contiguous view. Blocking, ordered after earlier launches."""
        a = np.asarray(array)
        if a.shape != self.shape:
            raise ValueError(f"array of shape {a.shape} written to a buffer of shape {self.shape}")
        if not self.contiguous:
            raise ValueError("write() needs a contiguous view; " + self.describe() + " is not")
        self._write(host_data(a, self.dtype), self.offset * self.itemsize)
        return self

    def view(self, shape=None, strides=None, offset=None, dtype=None):
        """Another view of the same memory; unspecified fields keep this view's. Strides default
        to row-major for a new shape. Launches check that a view stays inside the memory."""
        if shape is None:
            shape = self.shape
            strides = self.strides if strides is None else strides
        shape = tuple(int(n) for n in shape)
        if strides is None:
            strides, step = [], 1
            for n in reversed(shape):
                strides.insert(0, step)
                step *= max(n, 1)
        code = self._dtype_code if dtype is None else CODES[dtype]
        return self._view(code, shape, tuple(strides), self.offset if offset is None else offset)

    def reshape(self, *shape):
        """The contiguous view with another shape of the same size (one dimension may be -1)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if not self.contiguous:
            raise ValueError("reshape() needs a contiguous view; " + self.describe() + " is not")
        shape = np.empty(self.size, dtype=np.uint8).reshape(shape).shape  # NumPy's rules, -1
        return self.view(shape)

    def transpose(self, d0=0, d1=1):
        """Dimensions d0 and d1 swapped; no data moves."""
        shape, strides = list(self.shape), list(self.strides)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        strides[d0], strides[d1] = strides[d1], strides[d0]
        return self.view(shape, strides)

    @property
    def T(self):
        """The view with its dimensions reversed (NumPy's .T); no data moves."""
        return self.view(self.shape[::-1], self.strides[::-1])

    def narrow(self, dim, start, length):
        """`length` elements of dimension `dim` from `start` (PyTorch's narrow)."""
        if not 0 <= start <= start + length <= self.shape[dim]:
            raise IndexError(f"narrow({dim}, {start}, {length}) outside extent {self.shape[dim]}")
        shape = list(self.shape)
        shape[dim] = length
        offset = self.offset + (start * self.strides[dim] if length else 0)
        return self.view(shape, self.strides, offset)

    def __repr__(self):
        return f"<kernelport.Buffer {self.describe()}>"
