# SPDX-License-Identifier: Apache-2.0
"""Typed calls of the gru family (docs/kernels/gru.md): PyTorch's weight layout, gates r, z, n."""
from dataclasses import dataclass
from typing import Optional

from ._buffer import Buffer

# gru.rollout's modes (kp_gru_rollout_mode).
MODES = {"sample": 0, "mean": 1, "argmax": 2}


def step(x, h, w_ih, w_hh, b_ih=None, b_hh=None, h_out=None, *, linear_before_reset=True):
    """One GRU cell step with gru.step: h_out = GRU(x [B, I], h [B, H]) with w_ih [3H, I],
    w_hh [3H, H] and optional biases [3H]. `h_out` ([B, H], not overlapping h) is allocated when
    not given. linear_before_reset=False is ONNX's default variant. Returns h_out."""
    if h_out is None:
        h_out = h.runtime.empty(h.shape, h.dtype)
    h.runtime.kernel("gru.step")(
        x=x,
        h=h,
        w_ih=w_ih,
        w_hh=w_hh,
        b_ih=b_ih,
        b_hh=b_hh,
        h_out=h_out,
        linear_before_reset=int(linear_before_reset),
    )
    return h_out


@dataclass
class Rollout:
    """gru.rollout's outputs: y [E, B, T] predicted losses, h_T [E, B, H] the last state, and
    entropy and hnorm [E, B, T] when asked for (else None)."""

    y: Buffer
    h_T: Buffer
    entropy: Optional[Buffer] = None
    hnorm: Optional[Buffer] = None


def rollout(
    w_ih,
    w_hh,
    w_y,
    b_y,
    f,
    y0,
    h0,
    T,
    *,
    b_ih=None,
    b_hh=None,
    w_p=None,
    b_p=None,
    z0=None,
    mode="sample",
    seed=0,
    linear_before_reset=True,
    entropy=False,
    hnorm=False,
):
    """T steps of an ensemble of E GRU world models with gru.rollout (docs/kernels/gru.md has the
    shapes and the math). mode is "sample", "mean" or "argmax" (how the stochastic state follows
    the prior); entropy / hnorm True also computes those outputs. Returns a Rollout."""
    rt = h0.runtime
    E, B, _ = h0.shape
    out = Rollout(y=rt.empty((E, B, T)), h_T=rt.empty(h0.shape))
    if entropy:
        out.entropy = rt.empty((E, B, T))
    if hnorm:
        out.hnorm = rt.empty((E, B, T))
    rt.kernel("gru.rollout")(
        w_ih=w_ih,
        w_hh=w_hh,
        b_ih=b_ih,
        b_hh=b_hh,
        w_p=w_p,
        b_p=b_p,
        w_y=w_y,
        b_y=b_y,
        f=f,
        y0=y0,
        z0=z0,
        h0=h0,
        T=T,
        mode=MODES[mode] if isinstance(mode, str) else mode,
        seed=seed,
        linear_before_reset=int(linear_before_reset),
        y=out.y,
        h_T=out.h_T,
        entropy=out.entropy,
        hnorm=out.hnorm,
    )
    return out
