#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of bench-cnn-layers: the conv-family calls of one Fashion-MNIST CNN training
step (#25), alone, at batch 128, on CUDA with TF32 off, under bench-cnn-layers' case and kernel
names (a row's "kernel" is the Kernelport kernel it stands beside; "peer" says what PyTorch ran).

    PYTHONUNBUFFERED=1 python3 bench/peers/peer-cnn-layers.py --json results/peer-cnn-layers.json
    python3 bench/peers/peer-cnn-layers.py --compare results/bench-cnn-layers.json \\
        results/peer-cnn-layers.json

"seconds" is the wall time per call of 20 calls in a row (then a synchronize), as bench-cnn-layers
measures its own; "span_s" is one call's CUDA-event span after a GPU sleep (time_events). The
gradients run as autograd runs them: aten.convolution_backward with one output asked for."""
import argparse
import json
import platform
import time
import warnings

from peer_common import skip, time_events, write

IN_ROW = 20
LAYERS = [("conv1 N128 C1 28x28 K32", 1, 28, 32), ("conv2 N128 C32 14x14 K64", 32, 14, 64)]


def in_row(torch, fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(IN_ROW):
            fn()
        torch.cuda.synchronize()
        best.append((time.perf_counter() - t0) / IN_ROW)
    best.sort()
    return best[len(best) // 2]


def cases(torch):
    F = torch.nn.functional
    aten = torch.ops.aten
    dev = torch.device("cuda")
    out = []
    for case, C, H, K in LAYERS:
        N, P = 128, H // 2
        x = torch.rand((N, C, H, H), device=dev) * 2 - 1
        w = (torch.rand((K, C, 3, 3), device=dev) * 2 - 1) / (C * 9) ** 0.5
        b = torch.rand((K,), device=dev)
        dy = torch.rand((N, K, H, H), device=dev) * 2 - 1
        y = F.conv2d(x, w, b, padding=1)
        pooled, idx = F.max_pool2d_with_indices(y, 2)
        dp = torch.rand_like(pooled)

        def grad(mask):
            return lambda: aten.convolution_backward(dy, x, w, [K], [1, 1], [1, 1], [1, 1], False,
                                                     [0, 0], 1, mask)
        flops = 2.0 * N * K * H * H * C * 9
        calls = [("conv.conv2d", "F.conv2d (cuDNN)", lambda: F.conv2d(x, w, b, padding=1), flops),
                 ("conv.conv2d_backward_weight", "aten.convolution_backward, weight",
                  grad([False, True, False]), flops)]
        if C > 1:
            calls.append(("conv.conv2d_backward_data", "aten.convolution_backward, input",
                          grad([True, False, False]), flops))
        calls += [("conv.conv2d_backward_bias", "aten.convolution_backward, bias",
                   grad([False, False, True]), 0.0),
                  ("conv.maxpool2d", "F.max_pool2d_with_indices",
                   lambda: F.max_pool2d_with_indices(y, 2), 0.0),
                  ("conv.maxpool2d_backward", "aten.max_pool2d_with_indices_backward",
                   lambda: aten.max_pool2d_with_indices_backward(dp, y, [2, 2], [2, 2], [0, 0],
                                                                 [1, 1], False, idx), 0.0)]
        for kernel, peer, fn, fl in calls:
            span = time_events(torch, fn, False)[0]
            sec = in_row(torch, fn)
            out.append({"case": case, "kernel": kernel, "peer": peer, "status": "KP_OK",
                        "seconds": sec, "span_s": span, "flops": fl})
            print("%-26s %-30s %9.1f us in a row %9.1f us span  (%s)" % (
                case, kernel, sec * 1e6, span * 1e6, peer))
    return out


def compare(ours_path, peer_path):
    with open(ours_path) as f:
        ours = json.load(f)
    with open(peer_path) as f:
        peer = {(r["case"], r["kernel"]): r for r in json.load(f).get("results", [])}
    print("| call | Kernelport us (span) | PyTorch us (span) | ratio (PyTorch / ours, in a row) |")
    print("| --- | ---: | ---: | ---: |")
    total_o = total_p = 0.0
    for r in ours.get("results", []):
        p = peer.get((r["case"], r["kernel"]))
        span = (r.get("metrics") or {}).get("span_s", 0.0)
        if not p or not r.get("seconds"):
            print("| %s %s | %s | - | - |" % (r["case"], r["kernel"], r.get("status")))
            continue
        total_o += r["seconds"]
        total_p += p["seconds"]
        print("| %s %s | %.1f (%.1f) | %.1f (%.1f) | %.2fx |" % (
            r["case"].split()[0], r["kernel"], r["seconds"] * 1e6, span * 1e6,
            p["seconds"] * 1e6, p["span_s"] * 1e6, p["seconds"] / r["seconds"]))
    if total_o:
        print("| all of a step's calls | %.1f | %.1f | %.2fx |" % (
            total_o * 1e6, total_p * 1e6, total_p / total_o))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--compare", nargs=2, metavar=("OURS", "PEER"),
                    help="print a markdown table from bench-cnn-layers' and this script's JSON")
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    try:
        import torch
    except ImportError as e:
        return skip("peer-cnn-layers", args.json, "PyTorch is not installed (%s)" % e)
    if not torch.cuda.is_available():
        return skip("peer-cnn-layers", args.json, "CUDA is not available to PyTorch")
    warnings.filterwarnings("ignore", message=".*TF32.*")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    props = torch.cuda.get_device_properties(torch.device("cuda"))
    print("peer-cnn-layers on %s (torch %s, cuDNN %s)" % (props.name, torch.__version__,
                                                         torch.backends.cudnn.version()))
    write(args.json, {"benchmark": "peer-cnn-layers", "device": {"name": props.name},
                      "torch": torch.__version__, "python": platform.python_version(),
                      "results": cases(torch)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
