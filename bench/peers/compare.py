#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Joins bench-blas JSON with the cuBLAS peer's JSON by case and prints markdown tables for
docs/PERFORMANCE.md: throughput against cuBLAS FP32 (or, without a peer file, against the OpenBLAS
figures bench-blas measured in the same process), the launch-path overhead against CLBlast called
directly, and first-call latencies.

    python3 bench/peers/compare.py results/bench-blas-nvidia.json results/peer-blas-torch.json
    python3 bench/peers/compare.py results/bench-blas-tuned-nvidia.json results/peer-blas-torch.json
    python3 bench/peers/compare.py results/bench-blas-pocl.json \\
        --first-call results/bench-blas-first-cold-pocl.json results/bench-blas-first-warm-pocl.json

The targets are issue #4's, which it sets for tuned parameters: on a GPU, Kernelport at least
0.85x cuBLAS FP32 for n >= 4096 and 0.6x at n = 1024; on a CPU, at least 0.3x OpenBLAS at
n = 1024 and a warm-cache first call under 0.2 s; everywhere, a launch-path overhead under 2%
at n = 256. Standard library only."""
import argparse
import json
import os
import sys

LAUNCH_SUFFIX = " launch-path"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("compare.py: cannot read %s: %s" % (path, e))


def square(case):
    """n for an "n x n x n" case, else None."""
    parts = case.split("x")
    if len(parts) == 3 and len(set(parts)) == 1 and parts[0].isdigit():
        return int(parts[0])
    return None


def target_for(case, device_type):
    """(minimum ratio, text) of the issue's throughput targets, or (None, "-")."""
    n = square(case)
    if device_type == "gpu":
        if n is not None and n >= 4096:
            return 0.85, ">= 0.85x"
        if n == 1024:
            return 0.6, ">= 0.6x"
    elif device_type == "cpu" and n == 1024:
        return 0.3, ">= 0.3x"
    return None, "-"


def gflops(flops, seconds):
    return flops / seconds * 1e-9 if flops and seconds else None


def fmt(v, spec="{:,.1f}"):
    return spec.format(v) if v is not None else "-"


def ms(seconds):
    return fmt(seconds * 1e3 if seconds is not None else None, "{:,.2f}")


def ours_cell(r):
    """Kernelport's GFLOP/s, or why there is none: a failed row never shows a speed."""
    if r.get("status", "KP_OK") != "KP_OK":
        return None, "**%s**" % ("WRONG RESULT" if r["status"] == "KP_ERR_VERIFY"
                                 else r["status"])
    g = r.get("gflops") or gflops(r.get("flops"), r.get("seconds"))
    return g, fmt(g)


def direct_gflops(r):
    return gflops(r.get("flops"), (r.get("metrics") or {}).get("clblast_direct_s"))


def describe(doc):
    d = doc.get("device") or {}
    return "%s (%s %s, %s)" % (d.get("name", "?"), d.get("vendor", "?"), d.get("type", "?"),
                              d.get("driver") or d.get("version") or "?")


def throughput_table(ours, peer, out):
    dtype = (ours.get("device") or {}).get("type")
    rows = [r for r in ours.get("results", []) if not r["case"].endswith(LAUNCH_SUFFIX)]
    if peer is not None:
        name = "cuBLAS FP32"
        by_case = {r["case"]: r for r in peer.get("results", [])}
        theirs = {}
        for case, r in by_case.items():
            ok = r.get("status", "KP_OK") == "KP_OK"
            theirs[case] = (r.get("gflops") or gflops(r.get("flops"), r.get("seconds"))) if ok \
                else None
        out.append("Kernelport on %s vs %s on %s (torch %s, CUDA %s)." % (
            describe(ours), name, (peer.get("device") or {}).get("name", "?"),
            peer.get("torch", "?"), peer.get("cuda", "?")))
        if peer.get("skipped"):
            out.append("cuBLAS was not measured: %s." % peer["skipped"])
    else:
        name = "OpenBLAS"
        theirs = {r["case"]: gflops(r.get("flops"), r.get("peer_seconds")) for r in rows}
        peers = sorted({r.get("peer") for r in rows if r.get("peer")})
        out.append("Kernelport on %s vs %s in the same process." % (
            describe(ours), ", ".join(peers) or "no peer (OpenBLAS not built in)"))
    for note in ours.get("notes", []):
        # Which manifest entry the run's tuning came from: the targets are for tuned values.
        if note.startswith("blas.gemm tuning from:") or note.startswith("blas.gemm tuning: none"):
            out.append("")
            out.append(note.replace("blas.gemm tuning", "Kernelport's blas.gemm tuning", 1) + ".")
    out.append("")
    out.append("| case | Kernelport GFLOP/s | CLBlast-direct GFLOP/s | %s GFLOP/s | "
               "ratio (Kernelport / %s) | target | met? |" % (name, name.split()[0]))
    out.append("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    missed = []
    for r in rows:
        case = r["case"]
        g, cell = ours_cell(r)
        t = theirs.get(case)
        ratio = g / t if g and t else None
        want, want_text = target_for(case, dtype)
        if want is None:
            met = "-"
        elif ratio is None:
            met = "no data" if g is not None else "**no**"
        else:
            met = "yes" if ratio >= want else "**no**"
        if met == "**no**":
            missed.append(case)
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            case, cell, fmt(direct_gflops(r)), fmt(t),
            fmt(ratio, "{:.2f}x"), want_text, met))
    if peer is not None:
        extra = [(r["case"], r.get("tf32_gflops")) for r in peer.get("results", [])
                 if r.get("tf32_gflops")]
        if extra:
            out.append("")
            out.append("cuBLAS with TF32 allowed (extra information, not FP32): " + "; ".join(
                "%s %s GFLOP/s" % (c, fmt(g)) for c, g in extra) + ".")
    return missed


def launch_table(ours, out):
    rows = [r for r in ours.get("results", []) if r["case"].endswith(LAUNCH_SUFFIX)]
    if not rows:
        return []
    out.append("")
    out.append("Launch path: wall time per call of back-to-back calls plus one wait, "
               "Kernelport (kp_kernel_launch + kp_finish) vs CLBlastSgemm on the same queue "
               "(+ clFinish).")
    out.append("")
    out.append("| case | Kernelport us/call | CLBlast direct us/call | overhead (median) | "
               "overhead (fastest batches) | target | met? |")
    out.append("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    missed = []
    for r in rows:
        case = r["case"][:-len(LAUNCH_SUFFIX)]
        metrics = r.get("metrics") or {}
        over = metrics.get("overhead_pct")
        ok = r.get("status", "KP_OK") == "KP_OK" and over is not None
        has_target = square(case) == 256
        met = "-" if not has_target else ("yes" if ok and over < 2.0 else "**no**")
        if met == "**no**":
            missed.append(case + " launch path")
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            case, fmt(r["seconds"] * 1e6 if ok else None, "{:,.2f}"),
            fmt(r.get("peer_seconds") * 1e6 if r.get("peer_seconds") else None, "{:,.2f}"),
            fmt(over, "{:+.2f}%") if ok else "**%s**" % r.get("status"),
            fmt(metrics.get("overhead_min_pct") if ok else None, "{:+.2f}%"),
            "< 2%" if has_target else "-", met))
    return missed


def first_call_table(paths, out):
    if not paths:
        return []
    out.append("")
    out.append("First call: wall time from kp_kernel_launch to kp_finish of the first 1024^3 "
               "blas.gemm in a fresh process, then the second (same cache directories for a cold "
               "then a warm run).")
    out.append("")
    out.append("| run | device | runtime creation ms | first call ms | second call ms | target "
               "| met? |")
    out.append("| --- | --- | ---: | ---: | ---: | --- | --- |")
    missed = []
    for p in paths:
        doc = load(p)
        m = doc.get("metrics") or {}
        label = os.path.splitext(os.path.basename(p))[0]
        warm_cpu = "warm" in label and (doc.get("device") or {}).get("type") == "cpu"
        first = m.get("first_call_s")
        met = "-"
        if warm_cpu:
            met = "yes" if first is not None and first < 0.2 else "**no**"
        if met == "**no**":
            missed.append(label)
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            label, (doc.get("device") or {}).get("name", "?"),
            ms(m.get("runtime_create_s")), ms(first), ms(m.get("second_call_s")),
            "< 200 ms" if warm_cpu else "-", met))
    return missed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ours", help="bench-blas --json output")
    ap.add_argument("peer", nargs="?", help="peer-blas.py --json output (omit: vs OpenBLAS)")
    ap.add_argument("--first-call", nargs="+", default=[], metavar="JSON",
                    help="bench-blas --first-call outputs to tabulate")
    args = ap.parse_args()
    ours = load(args.ours)
    peer = load(args.peer) if args.peer else None
    out = []
    missed = throughput_table(ours, peer, out)
    missed += launch_table(ours, out)
    missed += first_call_table(args.first_call, out)
    out.append("")
    out.append("Targets not met (issue #4 sets them for tuned parameters): %s." % (
        ", ".join(missed) if missed else "none"))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
