#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The GPU peer of bench-blas: cuBLAS SGEMM through PyTorch with TF32 off, on bench-blas's shapes.

    PYTHONUNBUFFERED=1 python3 bench/peers/peer-blas.py --json results/peer-blas-torch.json

Row-major C = A B in f32 on random inputs, timed with CUDA events: the median of many products
after warm-up, each preceded by a short GPU sleep so that the host's launch cost is not inside
the timed span. TF32 is disabled (torch.backends.cuda.matmul.allow_tf32 = False and
torch.backends.cudnn.allow_tf32 = False) for the FP32 figures that Kernelport is compared with;
the TF32 figures are recorded beside them as extra information. Each result's error against a
float64 product shows which precision really ran. The JSON has the harness's "results" shape
(case, kernel, seconds, flops, gflops) so that bench/peers/compare.py joins it with bench-blas by
case. Exits 0, printing why, when PyTorch or CUDA is absent."""
import argparse
import platform
import statistics
import sys
import time
import warnings

from peer_common import skip, write

# The cases of bench-blas, named as it names them: M x N x K of row-major C[M,N] = A[M,K] B[K,N].
SQUARES = [256, 512, 1024, 2048, 4096, 8192]
MODEL_SHAPES = [(64, 768, 256), (1024, 3072, 1024), (16, 200704, 27)]


def shapes(quick):
    out = [(n, n, n) for n in SQUARES if not quick or n <= 512]
    return out + (MODEL_SHAPES[:1] if quick else MODEL_SHAPES)


def case_name(m, n, k):
    return "%dx%dx%d" % (m, n, k)


def time_matmul(torch, a, b, c, quick):
    """Median, 10th and 90th percentile seconds of torch.matmul(a, b, out=c) with CUDA events."""
    sleep = getattr(torch.cuda, "_sleep", None)
    for _ in range(3 if quick else 10):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    # Calibrate the run count to about 0.2 s of products (at least 5, at most 200).
    t0 = time.perf_counter()
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-6)
    runs = max(5, min(200, int((0.05 if quick else 0.2) / one)))
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if sleep:
            # Keeps the GPU busy while the host enqueues the events and the product, so the span
            # between the events holds the product alone, not the host's launch latency.
            sleep(100000)
        start.record()
        torch.matmul(a, b, out=c)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    times.sort()
    return statistics.median(times), times[len(times) // 10], times[(len(times) * 9) // 10]


def rel_err(torch, c, ref):
    """max|C - R| / max|R|, the normwise error bench-blas checks with."""
    return float((c.double() - ref).abs().max() / ref.abs().max())


def set_tf32(torch, on):
    """The switches the comparison is defined by; a PyTorch that refuses them gets its newer
    fp32_precision settings instead (never both: PyTorch rejects a mix). Returns which were set.
    Either way each result's error against float64 shows the precision that really ran."""
    try:
        torch.backends.cuda.matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on
        return "allow_tf32"
    except (AttributeError, RuntimeError):
        torch.backends.cuda.matmul.fp32_precision = "tf32" if on else "ieee"
        torch.backends.cudnn.conv.fp32_precision = "tf32" if on else "ieee"
        return "fp32_precision"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--quick", action="store_true", help="n <= 512 and one model shape, few runs")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        return skip("peer-blas", args.json, "PyTorch is not installed (%s)" % e)
    if not torch.cuda.is_available():
        return skip("peer-blas", args.json, "CUDA is not available to PyTorch %s" % torch.__version__)

    # PyTorch >= 2.9 warns that allow_tf32 will go away; the switch still works, and the JSON
    # records which one was used.
    warnings.filterwarnings("ignore", message=".*new API settings to control TF32.*")
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    results, api = [], None
    print("peer-blas on %s (torch %s, CUDA %s)" % (props.name, torch.__version__,
                                                   torch.version.cuda))
    print("%-16s %12s %12s %10s %12s %10s" % ("CASE", "FP32 US", "FP32 GFLOP/s", "FP32 ERR",
                                               "TF32 GFLOP/s", "TF32 ERR"))
    for m, n, k in shapes(args.quick):
        # Uniform [-1, 1) like bench-blas: never zeros, which some hardware multiplies faster.
        a = torch.rand((m, k), generator=gen, device=dev) * 2 - 1
        b = torch.rand((k, n), generator=gen, device=dev) * 2 - 1
        c = torch.empty((m, n), device=dev)
        ref = torch.matmul(a.double(), b.double())
        flops = 2.0 * m * n * k
        row = {"case": case_name(m, n, k), "kernel": "cublas_sgemm", "status": "KP_OK",
               "flops": flops, "bytes": 4.0 * (m * k + k * n + m * n)}
        for tf32 in (False, True):
            api = set_tf32(torch, tf32)
            med, p10, p90 = time_matmul(torch, a, b, c, args.quick)
            err = rel_err(torch, c, ref)
            if not tf32:
                row.update({"seconds": med, "p10_s": p10, "p90_s": p90,
                            "gflops": flops / med * 1e-9, "max_rel_err": err})
            else:
                row.update({"tf32_seconds": med, "tf32_gflops": flops / med * 1e-9,
                            "tf32_max_rel_err": err})
        set_tf32(torch, False)
        # FP32 rounding in a K-term sum stays far below 4 K 2^-24; TF32's 10-bit mantissa does
        # not, so an FP32 figure above it means TF32 leaked in and the figure is not FP32.
        if row["max_rel_err"] > 4 * k * 2.0 ** -24:
            row["status"] = "KP_ERR_VERIFY"
            row["note"] = "FP32 result too inexact: TF32 or a lower precision was used"
        results.append(row)
        print("%-16s %12.1f %12.1f %10.2g %12.1f %10.2g%s" % (
            row["case"], row["seconds"] * 1e6, row["gflops"], row["max_rel_err"],
            row["tf32_gflops"], row["tf32_max_rel_err"],
            "  !! " + row["note"] if "note" in row else ""))
        del a, b, c, ref
        torch.cuda.empty_cache()

    doc = {
        "benchmark": "peer-blas",
        "peer": "cublas_sgemm",
        "method": "torch.matmul(out=) on CUDA, f32, TF32 disabled; CUDA-event time of each "
                  "product after a GPU sleep, median of 5-200 after warm-up",
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
