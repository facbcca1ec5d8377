#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The GPU peers of bench-conv: cuDNN convolution and unfold (im2col) through PyTorch, TF32 off.

    PYTHONUNBUFFERED=1 python3 bench/peers/peer-conv.py --json results/peer-conv-torch.json

Issue #7's four shapes, named as bench-conv names them, f32 NCHW without bias, on random inputs:
  - "cudnn_conv2d": torch.nn.functional.conv2d with cudnn.benchmark off (cuDNN's heuristics pick
    the algorithm, as a first call in a training script gets it);
  - "cudnn_conv2d_benchmark": the same with cudnn.benchmark on (cuDNN times its algorithms, the
    Winograd and FFT ones included, and keeps the fastest);
  - "torch_unfold": torch.nn.functional.unfold, PyTorch's im2col, in the Caffe column layout
    conv.im2col writes ([N, C KH KW, OH OW]); its GB/s counts the input read and the columns
    written, as bench-conv counts them.
TF32 is off (torch.backends.cudnn.allow_tf32 = False, or the new fp32_precision = "ieee" API), and
each convolution's error against a float64 convolution shows which precision really ran. Each
call is timed with CUDA events after a short GPU sleep, so the span holds the call and not the
host's launch latency; the figure is the median of many calls after warm-up. The JSON has the
harness's "results" shape (case, kernel, status, seconds, flops, bytes). Exits 0, printing why,
when PyTorch or CUDA is absent."""
import argparse
import platform
import warnings

from peer_common import skip, time_events, write

# bench-conv's cases: (case, N, C, H, W, K, KH, KW, stride, pad). Pad 0 where the issue names none.
SHAPES = [("N64 C1 28x28 K16 5x5", 64, 1, 28, 28, 16, 5, 5, 1, 0),
          ("N64 C64 56x56 K64 3x3 p1", 64, 64, 56, 56, 64, 3, 3, 1, 1),
          ("N32 C128 28x28 K128 3x3", 32, 128, 28, 28, 128, 3, 3, 1, 0),
          ("N8 C3 224x224 K64 7x7 s2", 8, 3, 224, 224, 64, 7, 7, 2, 0)]


def set_tf32_off(torch):
    """TF32 off for matmul and cuDNN (the old switch, else the new API)."""
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        return "allow_tf32"
    except (AttributeError, RuntimeError):
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
        return "fp32_precision"


def row(case, kernel, timing, flops, nbytes, **extra):
    med, p10, p90 = timing
    r = {"case": case, "kernel": kernel, "status": "KP_OK", "seconds": med, "p10_s": p10,
         "p90_s": p90, "flops": flops, "bytes": nbytes,
         "gflops": flops / med * 1e-9 if med and flops else None,
         "gbs": nbytes / med * 1e-9 if med else None}
    r.update(extra)
    return r


def cases(torch, quick):
    F = torch.nn.functional
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(7)
    out = []
    for case, N, C, H, W, K, KH, KW, s, p in SHAPES:
        if quick:
            N = 2
            case = case.replace(case.split()[0], "N2")
        OH, OW = (H + 2 * p - KH) // s + 1, (W + 2 * p - KW) // s + 1
        x = torch.rand((N, C, H, W), device=dev, generator=gen) * 2 - 1
        w = (torch.rand((K, C, KH, KW), device=dev, generator=gen) * 2 - 1) / (C * KH * KW) ** 0.5
        flops = 2.0 * N * K * OH * OW * C * KH * KW
        nbytes = 4.0 * (x.numel() + w.numel() + N * K * OH * OW)
        with torch.no_grad():
            ref = F.conv2d(x.double(), w.double(), stride=s, padding=p)
            for kernel, bench in (("cudnn_conv2d", False), ("cudnn_conv2d_benchmark", True)):
                torch.backends.cudnn.benchmark = bench
                timing = time_events(torch, lambda: F.conv2d(x, w, stride=s, padding=p), quick)
                got = F.conv2d(x, w, stride=s, padding=p)
                err = float((got.double() - ref).abs().max() / ref.abs().max())
                r = row(case, kernel, timing, flops, nbytes, max_rel_err=err)
                # f32 sums of C KH KW products stay well inside 4 R u; TF32 (u = 2^-11) does not.
                if err > 4 * C * KH * KW * 2.0 ** -24:
                    r["status"] = "KP_ERR_VERIFY"
                    r["note"] = "result too inexact for FP32: TF32 or a lower precision was used"
                out.append(r)
            torch.backends.cudnn.benchmark = False
            cols = N * C * KH * KW * OH * OW
            timing = time_events(torch, lambda: F.unfold(x, (KH, KW), padding=p, stride=s), quick)
            out.append(row(case, "torch_unfold", timing, 0.0, 4.0 * (x.numel() + cols)))
        for r in out[-3:]:
            print("%-26s %-24s %10.1f us %9.1f GFLOP/s %8.1f GB/s" % (
                r["case"], r["kernel"], r["seconds"] * 1e6, r["gflops"] or 0.0, r["gbs"]))
        del x, w, ref
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--quick", action="store_true", help="N = 2 and few runs (a smoke test)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        return skip("peer-conv", args.json, "PyTorch is not installed (%s)" % e)
    if not torch.cuda.is_available():
        return skip("peer-conv", args.json, "CUDA is not available to PyTorch %s" % torch.__version__)
    warnings.filterwarnings("ignore", message=".*new API settings to control TF32.*")
    api = set_tf32_off(torch)
    props = torch.cuda.get_device_properties(torch.device("cuda"))
    print("peer-conv on %s (torch %s, CUDA %s, cuDNN %s)" % (
        props.name, torch.__version__, torch.version.cuda, torch.backends.cudnn.version()))
    results = cases(torch, args.quick)
    write(args.json, {
        "benchmark": "peer-conv",
        "method": "PyTorch on CUDA, f32 NCHW, no bias, TF32 off; CUDA-event spans after a GPU "
                  "sleep, median after warm-up",
        "device": {"name": props.name, "compute_capability": "%d.%d" % (props.major, props.minor),
                   "multiprocessors": props.multi_processor_count,
                   "total_memory": props.total_memory},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "tf32_switch": api,
        "python": platform.python_version(),
        "results": results,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
