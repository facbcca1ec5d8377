#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The GPU peers of bench-tc: cuBLAS GEMMs through PyTorch in FP32, TF32, FP16 and BF16.

    PYTHONUNBUFFERED=1 python3 bench/peers/peer-tc.py --json results/peer-tc-torch.json

bench-tc's shapes (row-major C = A B, A [m, k], B [k, n]); for each:
  - "cublas_fp32": torch.matmul on f32 with TF32 off (strict FP32);
  - "cublas_tf32": the same with TF32 on (allow_tf32, what tc.gemm's tf32 mode computes);
  - "cublas_f16" / "cublas_bf16": torch.matmul on half / bfloat16 tensors (FP32 accumulation,
    half output), the inputs converted once outside the timing.
Each result's rel_err_vs_fp64 is max |C - C64| / max |C64| over 8 rows, C64 the FP64 product of
the same f32 inputs, as bench-tc computes it. Timed with CUDA events after a short GPU sleep;
the median after warm-up. Exits 0, printing why, when PyTorch or CUDA is absent."""
import argparse
import platform

from peer_common import skip, time_events, write

SHAPES = [("square", 1024, 1024, 1024), ("square", 2048, 2048, 2048),
          ("square", 4096, 4096, 4096), ("square", 8192, 8192, 8192),
          ("gru", 1024, 3072, 1024), ("skinny", 64, 768, 256), ("edges", 1031, 2053, 1019)]
CHECK_ROWS = 8


def set_tf32(torch, on):
    """TF32 for matmul on or off (the old switch, else the new API)."""
    try:
        torch.backends.cuda.matmul.allow_tf32 = on
    except (AttributeError, RuntimeError):
        torch.backends.cuda.matmul.fp32_precision = "tf32" if on else "ieee"


def cases(torch, quick):
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(11)
    out = []
    for label, m, n, k in (SHAPES[:1] if quick else SHAPES):
        a = torch.rand((m, k), device=dev, generator=gen) * 2 - 1
        b = torch.rand((k, n), device=dev, generator=gen) * 2 - 1
        rows = torch.tensor([i * (m - 1) // (CHECK_ROWS - 1) for i in range(CHECK_ROWS)],
                            device=dev)
        ref = a[rows].double() @ b.double()
        top = float(ref.abs().max())
        flops = 2.0 * m * n * k
        case = "%s %dx%dx%d" % (label, m, n, k)
        runs = []
        for kernel, dtype, tf32 in (("cublas_fp32", torch.float32, False),
                                    ("cublas_tf32", torch.float32, True),
                                    ("cublas_f16", torch.float16, False),
                                    ("cublas_bf16", torch.bfloat16, False)):
            set_tf32(torch, tf32)
            x, y = a.to(dtype), b.to(dtype)
            med, p10, p90 = time_events(torch, lambda: torch.matmul(x, y), quick)
            got = torch.matmul(x, y)[rows].double()
            err = float((got - ref).abs().max()) / top
            size = 2 if dtype != torch.float32 else 4
            runs.append({"case": case, "kernel": kernel, "status": "KP_OK", "seconds": med,
                         "p10_s": p10, "p90_s": p90, "flops": flops,
                         "bytes": size * (m * k + k * n + m * n), "gflops": flops / med * 1e-9,
                         "rel_err_vs_fp64": err})
            del x, y, got
        set_tf32(torch, False)
        for r in runs:
            print("%-26s %-12s %10.1f us %10.1f GFLOP/s  err %.2e" % (
                r["case"], r["kernel"], r["seconds"] * 1e6, r["gflops"], r["rel_err_vs_fp64"]))
        out.extend(runs)
        del a, b, ref
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--quick", action="store_true", help="the first shape and few runs")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        return skip("peer-tc", args.json, "PyTorch is not installed (%s)" % e)
    if not torch.cuda.is_available():
        return skip("peer-tc", args.json, "CUDA is not available to PyTorch %s" % torch.__version__)
    props = torch.cuda.get_device_properties(torch.device("cuda"))
    print("peer-tc on %s (torch %s, CUDA %s)" % (props.name, torch.__version__,
                                                 torch.version.cuda))
    results = cases(torch, args.quick)
    write(args.json, {
        "benchmark": "peer-tc",
        "method": "torch.matmul on CUDA (cuBLAS); CUDA-event spans after a GPU sleep, median "
                  "after warm-up",
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
