#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The peers of bench-optim: torch.optim on CUDA, and NumPy and PyTorch on the CPU.

    PYTHONUNBUFFERED=1 python3 bench/peers/peer-optim.py --json results/peer-optim-torch.json
    python3 bench/peers/peer-optim.py --cpu --json results/peer-optim-cpu.json

The model is bench-optim's: 100 f32 tensors totalling 25M parameters (--cpu: 2.5M, bench-optim
--quick's; --total sets it), tensor i of w_i = 1 + 37 i mod 101 shares (the last takes the rest),
gradients set once. A step is what a training loop calls: opt.step() (the fused kernels and the
step counters' update), clip_grad_norm_, or both.

GPU (default), each call timed with CUDA events after a GPU sleep long enough to cover the host's
side of opt.step() (median after warm-up):
  torch_adamw_fused          AdamW(fused=True): the target's peer (issue #23: >= 1.2x faster)
  torch_adamw_foreach        AdamW(foreach=True), PyTorch's default on CUDA
  torch_adamw_fused_flat     AdamW(fused=True) on one flat 25M tensor (the arena as PyTorch sees it)
  torch_adamw_fused_groups   AdamW(fused=True) with every third tensor in a no-decay param group
  torch_sgd_fused            SGD(momentum=0.9, fused=True) (foreach where fused is missing)
  torch_clip_grad_norm       clip_grad_norm_(foreach=True), max_norm far above the norm
  torch_clip_adamw_fused     clip_grad_norm_(max_norm=1) then AdamW(fused=True).step()
  torch_ema_foreach_lerp     the weights' average: torch._foreach_lerp_(average, params, 1 - 0.999),
                             what AveragedModel(multi_avg_fn=get_ema_multi_avg_fn()) runs
CPU (--cpu), wall time of the same steps, median of repeats:
  numpy_adamw                AdamW's formulas as in-place NumPy ops on flat arrays (an arena)
  numpy_adamw_tensors        the same per tensor, over the 100 arrays
  numpy_sgd                  SGD with momentum, in place on flat arrays
  numpy_clip_grad_norm       the norm (one dot product) and the scaling, flat
  torch_cpu_adamw_fused      AdamW(fused=True) on the CPU (foreach, or the loop, where missing)
  torch_cpu_sgd              SGD(momentum=0.9), foreach
  torch_cpu_clip_grad_norm   clip_grad_norm_
  numpy_ema                  the weights' average, in place on flat arrays
  torch_cpu_ema              torch._foreach_lerp_ on the CPU
The JSON has the harness's "results" shape (case, kernel, status, seconds, bytes) for
bench/peers/compare-optim.py. Exits 0, printing why, when what a mode needs is absent."""
import argparse
import os
import platform
import statistics
import sys
import time

from optim_model import TENSORS, case_name, model_sizes, numpy_adamw
from peer_common import skip, time_events, write


def row(case, kernel, timing, nbytes, **extra):
    med, p10, p90 = timing
    r = {"case": case, "kernel": kernel, "status": "KP_OK", "seconds": med, "p10_s": p10,
         "p90_s": p90, "flops": 0.0, "bytes": nbytes, "gbs": nbytes / med * 1e-9}
    r.update(extra)
    print("%-26s %-28s %10.1f us %8.1f GB/s" % (case, kernel, med * 1e6, r["gbs"]))
    return r


def gpu_cases(torch, total, quick):
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    sizes = model_sizes(total)
    case, P = case_name(total), float(total)

    def params(flat=False):
        ps = [torch.rand(n, device=dev, generator=gen) * 2 - 1 for n in ([total] if flat else sizes)]
        ps = [torch.nn.Parameter(p) for p in ps]
        for p in ps:
            p.grad = torch.rand(p.shape, device=dev, generator=gen) * 2 - 1
        return ps

    # The host side of opt.step() over 100 tensors is longer than peer_common's default sleep.
    def timed(fn):
        return time_events(torch, fn, quick, sleep_cycles=2000000)

    out = []
    for kernel, kw, flat, groups in (("torch_adamw_fused", {"fused": True}, False, False),
                                     ("torch_adamw_foreach", {"foreach": True}, False, False),
                                     ("torch_adamw_fused_flat", {"fused": True}, True, False),
                                     ("torch_adamw_fused_groups", {"fused": True}, False, True)):
        ps = params(flat)
        spec = ps
        if groups:
            spec = [{"params": [p for i, p in enumerate(ps) if i % 3 != 2]},
                    {"params": [p for i, p in enumerate(ps) if i % 3 == 2], "weight_decay": 0.0}]
        opt = torch.optim.AdamW(spec, lr=1e-3, **kw)
        out.append(row(case, kernel, timed(opt.step), 28 * P))
        del opt, ps, spec
        torch.cuda.empty_cache()

    ps = params()
    try:
        opt = torch.optim.SGD(ps, lr=1e-3, momentum=0.9, fused=True)
        kernel = "torch_sgd_fused"
    except (TypeError, RuntimeError):
        opt = torch.optim.SGD(ps, lr=1e-3, momentum=0.9, foreach=True)
        kernel = "torch_sgd_foreach"
    opt.step()  # creates the momentum buffers: later steps move 20 bytes a parameter
    out.append(row(case, kernel, timed(opt.step), 20 * P))
    del opt

    clip = torch.nn.utils.clip_grad_norm_
    out.append(row(case, "torch_clip_grad_norm", timed(lambda: clip(ps, 1e30, foreach=True)),
                   12 * P))
    opt = torch.optim.AdamW(ps, lr=1e-3, fused=True)

    def clip_step():
        clip(ps, 1.0, foreach=True)
        opt.step()

    out.append(row(case, "torch_clip_adamw_fused", timed(clip_step), 40 * P))
    del opt
    avg = [p.detach().clone() for p in ps]
    weights = [p.detach() for p in ps]
    out.append(row(case, "torch_ema_foreach_lerp",
                   timed(lambda: torch._foreach_lerp_(avg, weights, 1 - 0.999)), 12 * P))
    return out


def time_host(fn, quick):
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    runs = max(3 if quick else 5, min(100, int((0.2 if quick else 1.0) / one)))
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return statistics.median(times), times[len(times) // 10], times[(len(times) * 9) // 10]


def numpy_cases(np, total, quick):
    rng = np.random.default_rng(1)
    sizes = model_sizes(total)
    case, P = case_name(total), float(total)
    p = rng.uniform(-1, 1, total).astype(np.float32)
    g = rng.uniform(-1, 1, total).astype(np.float32)
    m = (g * 0.1).astype(np.float32)
    v = (m * m).astype(np.float32)
    t = np.empty_like(p)
    lr = 1e-3
    out = [row(case, "numpy_adamw", time_host(numpy_adamw(np, p, g, m, v, t), quick), 28 * P)]
    cuts = np.cumsum([0] + sizes)
    steps = [numpy_adamw(np, *(a[cuts[i]:cuts[i + 1]] for a in (p, g, m, v, t)))
             for i in range(TENSORS)]

    def adamw_tensors():
        for step in steps:
            step()

    out.append(row(case, "numpy_adamw_tensors", time_host(adamw_tensors, quick), 28 * P))

    def sgd():
        np.multiply(m, np.float32(0.9), out=m)
        np.add(m, g, out=m)
        np.multiply(m, np.float32(lr), out=t)
        np.subtract(p, t, out=p)

    out.append(row(case, "numpy_sgd", time_host(sgd, quick), 20 * P))

    def clip():
        norm = float(np.sqrt(np.dot(g, g)))
        np.multiply(g, np.float32(min(1.0, 1e30 / (norm + 1e-6))), out=g)

    out.append(row(case, "numpy_clip_grad_norm", time_host(clip, quick), 12 * P))

    def ema():
        np.subtract(p, m, out=t)
        np.multiply(t, np.float32(1 - 0.999), out=t)
        np.add(m, t, out=m)

    out.append(row(case, "numpy_ema", time_host(ema, quick), 12 * P))
    return out


def torch_cpu_cases(torch, total, quick):
    gen = torch.Generator()
    gen.manual_seed(1)
    sizes = model_sizes(total)
    case, P = case_name(total), float(total)
    ps = [torch.nn.Parameter(torch.rand(n, generator=gen) * 2 - 1) for n in sizes]
    for p in ps:
        p.grad = torch.rand(p.shape, generator=gen) * 2 - 1
    out = []
    for kernel, kw in (("torch_cpu_adamw_fused", {"fused": True}),
                       ("torch_cpu_adamw_foreach", {"foreach": True})):
        try:
            opt = torch.optim.AdamW(ps, lr=1e-3, **kw)
            opt.step()
        except (TypeError, RuntimeError) as e:
            print("%s: not available (%s)" % (kernel, e))
            continue
        out.append(row(case, kernel, time_host(opt.step, quick), 28 * P))
    opt = torch.optim.SGD(ps, lr=1e-3, momentum=0.9, foreach=True)
    opt.step()
    out.append(row(case, "torch_cpu_sgd", time_host(opt.step, quick), 20 * P))
    clip = torch.nn.utils.clip_grad_norm_
    out.append(row(case, "torch_cpu_clip_grad_norm", time_host(lambda: clip(ps, 1e30), quick),
                   12 * P))
    avg = [p.detach().clone() for p in ps]
    weights = [p.detach() for p in ps]
    out.append(row(case, "torch_cpu_ema",
                   time_host(lambda: torch._foreach_lerp_(avg, weights, 1 - 0.999), quick), 12 * P))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--quick", action="store_true", help="few runs")
    ap.add_argument("--cpu", action="store_true", help="NumPy and PyTorch on the CPU")
    ap.add_argument("--total", type=int, help="parameters in all (default 25M, --cpu 2.5M)")
    args = ap.parse_args()
    total = args.total or (2500000 if args.cpu else 25000000)
    doc = {"benchmark": "peer-optim", "python": platform.python_version(), "results": []}
    if args.cpu:
        doc["method"] = ("the same step on the host: NumPy in place, PyTorch's CPU optimizers; wall "
                         "time, median of repeats")
        doc["cpus"] = os.cpu_count()
        try:
            import numpy as np
            doc["numpy"] = np.__version__
            doc["results"] += numpy_cases(np, total, args.quick)
        except ImportError as e:
            print("peer-optim: NumPy is not installed (%s)" % e)
        try:
            import torch
            torch.set_num_threads(os.cpu_count() or 1)
            doc["torch"] = torch.__version__
            doc["torch_threads"] = torch.get_num_threads()
            doc["results"] += torch_cpu_cases(torch, total, args.quick)
        except ImportError as e:
            print("peer-optim: PyTorch is not installed (%s)" % e)
        if not doc["results"]:
            return skip("peer-optim", args.json, "neither NumPy nor PyTorch is installed")
        write(args.json, doc)
        return 0
    try:
        import torch
    except ImportError as e:
        return skip("peer-optim", args.json, "PyTorch is not installed (%s)" % e)
    if not torch.cuda.is_available():
        return skip("peer-optim", args.json,
                    "CUDA is not available to PyTorch %s" % torch.__version__)
    props = torch.cuda.get_device_properties(torch.device("cuda"))
    print("peer-optim on %s (torch %s, CUDA %s)" % (props.name, torch.__version__,
                                                     torch.version.cuda))
    doc.update({
        "method": "torch.optim on CUDA, f32; CUDA-event spans after a GPU sleep that covers the "
                  "host's side of the call, median after warm-up",
        "device": {"name": props.name, "compute_capability": "%d.%d" % (props.major, props.minor),
                   "multiprocessors": props.multi_processor_count,
                   "total_memory": props.total_memory},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "results": gpu_cases(torch, total, args.quick),
    })
    write(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
