#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The GPU peers of bench-logic: logic-gate layers written in plain PyTorch on CUDA.

    PYTHONUNBUFFERED=1 python3 bench/peers/peer-logic.py --json results/peer-logic-torch.json

difflogic's CUDA extension cannot be built on the GPU machine (no registry is reachable), so its
figures stay the ones issue #6 quotes. What runs here, on bench-logic's layers (G gates over
IN = G inputs, difflogic's random wiring, feature-major x [IN, N]):
  - "torch_soft16": difflogic's pure-PyTorch path, the softmax-weighted sum of all 16 relaxations;
  - "torch_soft4": the same layer through the four coefficients C = M softmax(w) that
    logic.forward uses (y = C1 + Ca a + Cb b + Cab ab), a stronger PyTorch peer;
  - "torch_soft4_backward": autograd's backward of torch_soft4 (dx and dw together);
  - "torch_packed": hard inference on int64 words (64 samples per word), each gate as the OR of
    its truth table's four minterms, all gates in one vectorised expression.
Each call is timed with CUDA events after a short GPU sleep; the figure is the median after
warm-up. The JSON has the harness's "results" shape (case, kernel, status, seconds, bytes) plus
gate_evals_per_s. Exits 0, printing why, when PyTorch or CUDA is absent."""
import argparse
import platform

from peer_common import skip, time_events, write

SIZES = [(64000, 1024), (64000, 100), (8000, 1024), (8000, 100)]

# The 16 ops in difflogic's order as rows of coefficients on (1, a, b, ab).
TABLE = [(0, 0, 0, 0), (0, 0, 0, 1), (0, 1, 0, -1), (0, 1, 0, 0), (0, 0, 1, -1), (0, 0, 1, 0),
         (0, 1, 1, -2), (0, 1, 1, -1), (1, -1, -1, 1), (1, -1, -1, 2), (1, 0, -1, 0),
         (1, 0, -1, 1), (1, -1, 0, 0), (1, -1, 0, 1), (1, 0, 0, -1), (1, 0, 0, 0)]


def soft16(torch, x, a, b, w):
    """difflogic's bin_op_s: the 16 relaxations weighted by softmax(w)."""
    A, B = x[a], x[b]
    AB = A * B
    p = torch.softmax(w, dim=-1)
    ops = [torch.zeros_like(A), AB, A - AB, A, B - AB, B, A + B - 2 * AB, A + B - AB,
           1 - (A + B - AB), 1 - (A + B - 2 * AB), 1 - B, 1 - B + AB, 1 - A, 1 - A + AB, 1 - AB,
           torch.ones_like(A)]
    return sum(p[:, i:i + 1] * ops[i] for i in range(16))


def soft4(torch, x, a, b, w, M):
    C = torch.softmax(w, dim=-1) @ M  # [G, 4]
    A, B = x[a], x[b]
    return C[:, 0:1] + C[:, 1:2] * A + C[:, 2:3] * B + C[:, 3:4] * (A * B)


def packed(torch, xb, a, b, masks):
    """Hard gates on 64-sample words: OR of the minterms whose truth-table bit is set."""
    A, B = xb[a], xb[b]
    nA, nB = ~A, ~B
    return (nA & nB & masks[0]) | (nA & B & masks[1]) | (A & nB & masks[2]) | (A & B & masks[3])


def row(case, kernel, timing, nbytes, evals, **extra):
    med, p10, p90 = timing
    r = {"case": case, "kernel": kernel, "status": "KP_OK", "seconds": med, "p10_s": p10,
         "p90_s": p90, "flops": 0.0, "bytes": nbytes, "gbs": nbytes / med * 1e-9,
         "gate_evals_per_s": evals / med}
    r.update(extra)
    return r


def cases(torch, quick):
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(42)
    M = torch.tensor(TABLE, dtype=torch.float32, device=dev)
    out = []
    for G, N in (SIZES[2:] if quick else SIZES):
        IN = G
        # difflogic's "random" connections: a permutation of the inputs repeated to cover 2G
        # slots, shuffled, split into a and b.
        reps = (2 * G + IN - 1) // IN
        perm = torch.cat([torch.randperm(IN, device=dev, generator=gen) for _ in range(reps)])
        perm = perm[:2 * G][torch.randperm(2 * G, device=dev, generator=gen)]
        a, b = perm[:G].contiguous(), perm[G:].contiguous()
        x = torch.rand((IN, N), device=dev, generator=gen)
        w = torch.randn((G, 16), device=dev, generator=gen)
        GN = float(G * N)
        with torch.no_grad():
            ref = soft16(torch, x.double(), a, b, w.double())
            for kernel, fn in (("torch_soft16", lambda: soft16(torch, x, a, b, w)),
                               ("torch_soft4", lambda: soft4(torch, x, a, b, w, M))):
                err = float((fn().double() - ref).abs().max())
                out.append(row("forward G=%d N=%d" % (G, N), kernel, time_events(torch, fn, quick),
                               12.0 * GN, GN, max_abs_err=err))
        xg = x.clone().requires_grad_(True)
        wg = w.clone().requires_grad_(True)
        dy = torch.rand((G, N), device=dev, generator=gen) * 2 - 1

        def backward():
            xg.grad = None
            wg.grad = None
            soft4(torch, xg, a, b, wg, M).backward(dy)

        out.append(row("backward G=%d N=%d" % (G, N), "torch_soft4_backward",
                       time_events(torch, backward, quick), 4.0 * (3 * G * N + IN * N), GN))
        W = (N + 63) // 64
        xb = torch.randint(-2 ** 62, 2 ** 62, (IN, W), device=dev, generator=gen,
                           dtype=torch.int64)
        op = torch.argmax(w, dim=-1)
        # The truth table of each gate's op at (a, b) = (0,0), (0,1), (1,0), (1,1).
        C = M[op]
        masks = []
        for av, bv in ((0, 0), (0, 1), (1, 0), (1, 1)):
            t = (C[:, 0] + C[:, 1] * av + C[:, 2] * bv + C[:, 3] * av * bv).round().to(torch.int64)
            masks.append((-t).unsqueeze(1))  # 1 -> all ones, 0 -> zero
        with torch.no_grad():
            fn = lambda: packed(torch, xb, a, b, masks)  # noqa: E731
            out.append(row("eval_packed G=%d N=%d" % (G, N), "torch_packed",
                           time_events(torch, fn, quick), 8.0 * (IN * W + G * W), GN))
        for r in out[-4:]:
            print("%-26s %-22s %10.1f us %8.1f GB/s %10.3g gate-evals/s" % (
                r["case"], r["kernel"], r["seconds"] * 1e6, r["gbs"], r["gate_evals_per_s"]))
        del x, w, xg, wg, dy, xb, ref
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--quick", action="store_true", help="the small layers and few runs")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        return skip("peer-logic", args.json, "PyTorch is not installed (%s)" % e)
    if not torch.cuda.is_available():
        return skip("peer-logic", args.json, "CUDA is not available to PyTorch %s" % torch.__version__)
    props = torch.cuda.get_device_properties(torch.device("cuda"))
    print("peer-logic on %s (torch %s, CUDA %s)" % (props.name, torch.__version__,
                                                     torch.version.cuda))
    results = cases(torch, args.quick)
    write(args.json, {
        "benchmark": "peer-logic",
        "method": "plain PyTorch on CUDA, f32 soft gates and int64 packed hard gates; CUDA-event "
                  "spans after a GPU sleep, median after warm-up",
        "device": {"name": props.name, "compute_capability": "%d.%d" % (props.major, props.minor),
                   "multiprocessors": props.multi_processor_count},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "results": results,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
