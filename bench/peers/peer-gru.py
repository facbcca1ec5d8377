#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The GPU peers of bench-gru: the seed plan's ensemble rollout and GRU sequences in PyTorch.

    PYTHONUNBUFFERED=1 python3 bench/peers/peer-gru.py --json results/peer-gru-torch.json

Three groups of cases, f32 with TF32 off, each timed with CUDA events (median of many runs after
warm-up):
  (a) the feedback rollout as eager PyTorch runs it: for t in range(T), x_t = [f, y_{t-1}, z_{t-1}],
      h = nn.GRUCell(x, h), logits = prior(h), z = one-hot draw of softmax(logits)
      (torch.multinomial), y = loss([h; z]). "gru_cell_loop" steps the E members as one batch of
      E*B rows through one cell (what issue #5's 1.8 ms describes; the members then share
      weights, so it is a lower bound on an ensemble's cost); "gru_cell_members" runs E cells of
      their own in the loop (the ensemble as written naively). The span runs from before the first
      step to after the last, host launch gaps included: that is the latency a training loop sees.
  (b) cuDNN's nn.GRU over the same T steps without feedback (x_t given), batch E*B, one call: the
      fastest thing PyTorch offers for these sizes, though it cannot feed y_t and z_t back.
  (c) cuDNN's nn.GRU at gru.sequence's large benchmark sizes (T 15; H 1024, B 1024 and H 2048,
      B 256; input size H), whose error against a float64 run shows TF32 stayed off.
The JSON has the harness's "results" shape (case, kernel, status, seconds, flops) for
bench/peers/compare-gru.py. Exits 0, printing why, when PyTorch or CUDA is absent."""
import argparse
import platform
import sys
import warnings

from peer_common import skip, time_events, write

# bench-gru's rollout sizes: (case, E, B, F, H, S, T).
ROLLOUTS = [("seed E5 B1 H256 T50", 5, 1, 64, 256, 256, 50),
            ("seed100 E5 B1 H256 T100", 5, 1, 64, 256, 256, 100),
            ("h1024 E5 B1 H1024 T50", 5, 1, 64, 1024, 256, 50)]
# gru.sequence's large sizes, named as kernelport bench names them: (size, T, B, H).
SEQUENCES = [("big", 15, 1024, 1024), ("h2048", 15, 256, 2048)]


def set_tf32_off(torch):
    """TF32 off for matmul and cuDNN (peer-blas.py's switch, old or new API)."""
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        return "allow_tf32"
    except (AttributeError, RuntimeError):
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.rnn.fp32_precision = "ieee"
        return "fp32_precision"


def row(case, kernel, timing, flops, **extra):
    med, p10, p90 = timing
    r = {"case": case, "kernel": kernel, "status": "KP_OK", "seconds": med, "p10_s": p10,
         "p90_s": p90, "flops": flops, "gflops": flops / med * 1e-9 if med else None}
    r.update(extra)
    return r


def rollout_cases(torch, nn, quick):
    out = []
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(5)
    for case, E, B, F, H, S, T in (ROLLOUTS[:1] if quick else ROLLOUTS):
        I = F + 1 + S
        N = E * B
        f = torch.rand((N, F), device=dev, generator=gen) * 2 - 1
        y0 = torch.rand((N, 1), device=dev, generator=gen)
        z0 = torch.softmax(torch.rand((N, S), device=dev, generator=gen), dim=-1)
        h0 = torch.rand((N, H), device=dev, generator=gen) - 0.5
        flops = N * T * (2 * 3 * H * (I + H) + 2 * S * H + 2 * (H + S))

        def make_heads():
            return (nn.GRUCell(I, H).to(dev), nn.Linear(H, S).to(dev), nn.Linear(H + S, 1).to(dev))

        shared = make_heads()
        members = [make_heads() for _ in range(E)]

        def step(cell, prior, loss, f_, y, z, h):
            h = cell(torch.cat([f_, y, z], dim=1), h)
            probs = torch.softmax(prior(h), dim=-1)
            k = torch.multinomial(probs, 1)
            z = torch.zeros_like(probs).scatter_(1, k, 1.0)
            y = loss(torch.cat([h, z], dim=1))
            return y, z, h

        @torch.no_grad()
        def batched():
            y, z, h = y0, z0, h0
            ys = []
            for _ in range(T):
                y, z, h = step(*shared, f, y, z, h)
                ys.append(y)
            return torch.cat(ys, dim=1)

        @torch.no_grad()
        def per_member():
            outs = []
            for e in range(E):
                sl = slice(e * B, (e + 1) * B)
                y, z, h = y0[sl], z0[sl], h0[sl]
                ys = []
                for _ in range(T):
                    y, z, h = step(*members[e], f[sl], y, z, h)
                    ys.append(y)
                outs.append(torch.cat(ys, dim=1))
            return outs

        out.append(row("rollout " + case, "gru_cell_loop",
                       time_events(torch, batched, quick, False, 5, 2, 100), flops,
                       note="E*B rows through one nn.GRUCell + heads, multinomial draw, "
                            "Python loop over T (launch gaps included)"))
        out.append(row("rollout " + case, "gru_cell_members",
                       time_events(torch, per_member, quick, False, 5, 2, 100), flops,
                       note="E nn.GRUCell + heads of their own, Python loops over E and T"))
        gru = nn.GRU(I, H).to(dev)
        x = torch.rand((T, N, I), device=dev, generator=gen) * 2 - 1
        hx = h0.unsqueeze(0).contiguous()
        with torch.no_grad():
            timing = time_events(torch, lambda: gru(x, hx), quick, True, 5, 2, 100)
        out.append(row("rollout " + case, "cudnn_gru_no_feedback", timing,
                       N * T * 2 * 3 * H * (I + H),
                       note="one nn.GRU call over T steps with the inputs given (no y/z "
                            "feedback, no heads)"))
        # The same call replayed from a CUDA graph: cuDNN's GPU time without the host's launches
        # between its kernels, which set the call's time when the host is slow.
        n_rows = 4
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.no_grad():
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        gru(x, hx)
                torch.cuda.current_stream().wait_stream(side)
                with torch.cuda.graph(graph):
                    gru(x, hx)
            out.append(row("rollout " + case, "cudnn_gru_no_feedback_graph",
                           time_events(torch, graph.replay, quick, True, 5, 2, 100),
                           N * T * 2 * 3 * H * (I + H),
                           note="the nn.GRU call above captured once in a CUDA graph and "
                                "replayed"))
        except RuntimeError as err:
            print("cudnn_gru_no_feedback_graph: not captured (%s)" % err)
            n_rows = 3
        for r in out[-n_rows:]:
            print("%-36s %-24s %10.1f us" % (r["case"], r["kernel"], r["seconds"] * 1e6))
        del shared, members, gru, x
        torch.cuda.empty_cache()
    return out


def sequence_cases(torch, nn, quick):
    out = []
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(6)
    for size, T, B, H in (SEQUENCES[:1] if quick else SEQUENCES):
        gru = nn.GRU(H, H).to(dev)
        x = torch.rand((T, B, H), device=dev, generator=gen) * 2 - 1
        h0 = torch.rand((1, B, H), device=dev, generator=gen) - 0.5
        with torch.no_grad():
            timing = time_events(torch, lambda: gru(x, h0), quick, True, 5, 2, 100)
            got = gru(x, h0)[0]
            ref = gru.double()(x.double(), h0.double())[0]
            err = float((got.double() - ref).abs().max() / ref.abs().max())
        flops = T * B * 2 * 3 * H * (H + H)
        r = row("sequence " + size, "cudnn_gru", timing, flops, max_rel_err=err,
                shape="T %d, B %d, I %d, H %d" % (T, B, H, H))
        # f32 rounding over T steps of 2H-term sums stays far below this; TF32 would not.
        if err > 64 * H * 2.0 ** -24:
            r["status"] = "KP_ERR_VERIFY"
            r["note"] = "result too inexact for FP32: TF32 or a lower precision was used"
        print("%-36s %-24s %10.1f us  %8.1f GFLOP/s  err %.2g" % (
            r["case"], r["kernel"], r["seconds"] * 1e6, r["gflops"], err))
        out.append(r)
        del gru, x, h0, got, ref
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--quick", action="store_true", help="the first size of each group, few runs")
    args = ap.parse_args()
    try:
        import torch
        from torch import nn
    except ImportError as e:
        return skip("peer-gru", args.json, "PyTorch is not installed (%s)" % e)
    if not torch.cuda.is_available():
        return skip("peer-gru", args.json, "CUDA is not available to PyTorch %s" % torch.__version__)
    warnings.filterwarnings("ignore", message=".*new API settings to control TF32.*")
    api = set_tf32_off(torch)
    torch.backends.cudnn.benchmark = False
    props = torch.cuda.get_device_properties(torch.device("cuda"))
    print("peer-gru on %s (torch %s, CUDA %s, cuDNN %s)" % (
        props.name, torch.__version__, torch.version.cuda, torch.backends.cudnn.version()))
    results = rollout_cases(torch, nn, args.quick) + sequence_cases(torch, nn, args.quick)
    doc = {
        "benchmark": "peer-gru",
        "method": "PyTorch eager on CUDA, f32, TF32 off; CUDA-event spans, median after warm-up "
                  "(single cuDNN calls after a GPU sleep so the span holds the call alone)",
        "device": {"name": props.name, "compute_capability": "%d.%d" % (props.major, props.minor),
                   "multiprocessors": props.multi_processor_count,
                   "total_memory": props.total_memory},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "tf32_switch": api,
        "python": platform.python_version(),
        "results": results,
    }
    write(args.json, doc)
    return 1 if any(r["status"] != "KP_OK" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
