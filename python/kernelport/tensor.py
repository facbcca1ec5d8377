# SPDX-License-Identifier: Apache-2.0
"""Typed calls of the tensor family (docs/kernels/tensor.md): elementwise ops with NumPy's
broadcasting, reductions, softmax. Each allocates its output when `out` is not given and returns
it; `out` may be an input (in place)."""
import numpy as np


def _launch(name, out, **args):
    out.runtime.kernel(name)(y=out, **args)
    return out


def _binary(name):
    def op(a, b, out=None):
        if out is None:
            out = a.runtime.empty(np.broadcast_shapes(a.shape, b.shape), a.dtype)
        return _launch("tensor." + name, out, a=a, b=b)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} of a and b (broadcast) with tensor.{name}."
    return op


def _unary(name):
    def op(x, out=None):
        if out is None:
            out = x.runtime.empty(x.shape, x.dtype)
        return _launch("tensor." + name, out, x=x)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} of x with tensor.{name}."
    return op


add, sub, mul, div, maximum, minimum, pow = map(
    _binary, ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]
)
exp, log, tanh, sigmoid, relu, neg, sqrt, abs, square, gelu, silu = map(
    _unary, ["exp", "log", "tanh", "sigmoid", "relu", "neg", "sqrt", "abs", "square", "gelu", "silu"]
)


def _reduction(name):
    def op(x, axes=None, keepdims=False, out=None):
        dims = range(len(x.shape)) if axes is None else [axes] if isinstance(axes, int) else axes
        dims = {d % len(x.shape) for d in dims} if x.shape else set()
        if out is None:
            shape = [1 if d in dims else n for d, n in enumerate(x.shape) if keepdims or d not in dims]
            out = x.runtime.empty(shape, x.dtype)
        mask = 0
        for d in dims:
            mask |= 1 << d
        return _launch("tensor." + name, out, x=x, axes=mask or -1)

    op.__name__ = name
    op.__doc__ = (
        f"tensor.{name} of x over `axes` (an int or a sequence; None: all), the reduced axes kept "
        "as 1 with keepdims."
    )
    return op


sum, mean, max, min = map(_reduction, ["sum", "mean", "max", "min"])


softmax = _unary("softmax")
softmax.__doc__ = "softmax over x's last dimension with tensor.softmax."
log_softmax = _unary("log_softmax")
log_softmax.__doc__ = "log(softmax) over x's last dimension with tensor.log_softmax."


def fill(out, value):
    """Every element of `out` set to `value` with tensor.fill."""
    return _launch("tensor.fill", out, value=value)
