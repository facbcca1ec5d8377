# SPDX-License-Identifier: Apache-2.0
"""Typed calls of the logic family (docs/kernels/logic.md): layers of differentiable two-input
logic gates."""


def coeffs(w, C=None, op=None, *, hard=False):
    """The gates' coefficients [G, 4] (C1, Ca, Cb, Cab) from their op logits w [G, 16] with
    logic.coeffs: softmax(w) (hard=False, training) or one-hot argmax (hard=True); `op` [G] (i32)
    receives the argmax when given. Returns C."""
    if C is None:
        C = w.runtime.empty((w.shape[0], 4))
    w.runtime.kernel("logic.coeffs")(w=w, C=C, op=op, hard=int(hard))
    return C


def forward(x, a_idx, b_idx, C, y=None, *, check_wiring=True):
    """A layer of G gates over x [IN, N] with logic.forward: y [G, N] = C1 + Ca a + Cb b + Cab ab,
    a and b the rows a_idx, b_idx [G] (i32) of x. check_wiring reads the indices back and refuses
    any outside x. `y` is allocated when not given. Returns y."""
    if y is None:
        y = x.runtime.empty((C.shape[0], x.shape[1]))
    x.runtime.kernel("logic.forward")(
        x=x, a_idx=a_idx, b_idx=b_idx, C=C, y=y, check_wiring=int(check_wiring)
    )
    return y
