#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Issue #23's optimizer comparisons as a markdown table for docs/PERFORMANCE.md.

    python3 bench/peers/compare-optim.py --gpu results/bench-optim-nvidia.json \\
        --peer results/peer-optim-torch.json --cpu results/bench-optim-pocl.json \\
        --cpu-peer results/peer-optim-cpu.json

--gpu and --cpu are bench-optim's JSON on the GPU and on PoCL (run it with --quick there, or pass
peer-optim.py --cpu the same --total); --peer and --cpu-peer are peer-optim.py's on CUDA and with
--cpu. Any may be left out: its rows then read "no data". Speedup = peer time / Kernelport time.
The target: AdamW over 100 tensors totalling 25M parameters at least 1.2x faster than
torch.optim.AdamW(fused=True) on the GPU; the other rows are reported without a target. Standard
library only."""
import argparse
import json
import sys


def load(path):
    if not path:
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("compare-optim.py: cannot read %s: %s" % (path, e))


def seconds(doc, kernel):
    """The row's median seconds, or None when absent or failed (a wrong result is no speed)."""
    for r in (doc or {}).get("results", []):
        if r.get("kernel") == kernel:
            return r.get("seconds") if r.get("status", "KP_OK") == "KP_OK" else None
    return None


def case(doc):
    rows = (doc or {}).get("results", [])
    return rows[0]["case"] if rows else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", help="bench-optim --json on the GPU")
    ap.add_argument("--peer", help="peer-optim.py --json on CUDA")
    ap.add_argument("--cpu", help="bench-optim --json on PoCL")
    ap.add_argument("--cpu-peer", help="peer-optim.py --cpu --json")
    args = ap.parse_args()
    gpu, peer, cpu, cpu_peer = load(args.gpu), load(args.peer), load(args.cpu), load(args.cpu_peer)
    lines = ["| device | case | Kernelport | us | peer | peer us | speedup | target | met? |",
             "| --- | --- | --- | ---: | --- | ---: | ---: | --- | --- |"]
    missed = []

    def add(where, doc, ours, peer_doc, peer_kernel, want=None):
        o, p = seconds(doc, ours), seconds(peer_doc, peer_kernel)
        ratio = p / o if o and p else None
        met = "-" if want is None else "no data" if ratio is None else (
            "yes" if ratio >= want else "no")
        if met == "no":
            missed.append("%s %s vs %s" % (where, ours, peer_kernel))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            where, case(doc or peer_doc), ours, "%.1f" % (o * 1e6) if o else "no data",
            peer_kernel, "%.1f" % (p * 1e6) if p else "no data",
            "%.2fx" % ratio if ratio else "-", ">= %.1fx" % want if want else "-", met))

    dev = ((gpu or {}).get("device") or {}).get("name", "GPU")
    add(dev, gpu, "optim.adamw", peer, "torch_adamw_fused", 1.2)
    add(dev, gpu, "optim.adamw", peer, "torch_adamw_foreach")
    add(dev, gpu, "optim.adamw", peer, "torch_adamw_fused_flat")
    add(dev, gpu, "optim.adamw (segments, multipliers)", peer, "torch_adamw_fused_groups")
    add(dev, gpu, "optim.sgd (momentum)", peer, "torch_sgd_fused")
    add(dev, gpu, "optim.sgd (momentum)", peer, "torch_sgd_foreach")
    add(dev, gpu, "optim.clip_grad_norm", peer, "torch_clip_grad_norm")
    add(dev, gpu, "clip_grad_norm (coef) + optim.adamw (grad_mul)", peer, "torch_clip_adamw_fused")
    add(dev, gpu, "optim.ema", peer, "torch_ema_foreach_lerp")
    host = ((cpu or {}).get("device") or {}).get("name", "PoCL")
    for ours, peers in (("optim.adamw", ("numpy_adamw", "numpy_adamw_tensors",
                                         "torch_cpu_adamw_fused", "torch_cpu_adamw_foreach")),
                        ("optim.sgd (momentum)", ("numpy_sgd", "torch_cpu_sgd")),
                        ("optim.clip_grad_norm", ("numpy_clip_grad_norm",
                                                  "torch_cpu_clip_grad_norm")),
                        ("optim.ema", ("numpy_ema", "torch_cpu_ema"))):
        for p in peers:
            if seconds(cpu_peer, p) or not cpu_peer:
                add(host, cpu, ours, cpu_peer, p)
    print("\n".join(lines))
    if missed:
        print("\nmissed: " + "; ".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
