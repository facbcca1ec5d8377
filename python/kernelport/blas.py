# SPDX-License-Identifier: Apache-2.0
"""Typed calls of the blas family (docs/kernels/blas.md)."""


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False):
    """C = alpha op(A) op(B) + beta C with blas.gemm; op transposes when trans_a / trans_b.
    `c` (M x N) is allocated in a's dtype when not given (beta then does not matter). Returns c.
    Asynchronous: c.numpy() waits for it."""
    m = a.shape[1] if trans_a else a.shape[0]
    n = b.shape[0] if trans_b else b.shape[1]
    if c is None:
        c = a.runtime.empty((m, n), a.dtype)
    a.runtime.kernel("blas.gemm")(
        A=a, B=b, C=c, alpha=alpha, beta=beta, trans_a=int(trans_a), trans_b=int(trans_b)
    )
    return c


def gemv(a, x, y=None, *, alpha=1.0, beta=0.0, trans=False):
    """y = alpha op(A) x + beta y with blas.gemv; `y` is allocated when not given. Returns y."""
    m = a.shape[1] if trans else a.shape[0]
    if y is None:
        y = a.runtime.empty((m,), a.dtype)
    a.runtime.kernel("blas.gemv")(A=a, x=x, y=y, alpha=alpha, beta=beta, trans=int(trans))
    return y
