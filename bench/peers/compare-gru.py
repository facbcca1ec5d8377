#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Issue #5's speed targets for the gru family as a markdown table for docs/PERFORMANCE.md.

    python3 bench/peers/compare-gru.py --gpu results/bench-gru-nvidia.json \\
        --peer results/peer-gru-torch.json --cpu results/bench-gru-pocl.json \\
        --kernels results/bench-nvidia.json

--gpu and --cpu are bench-gru's JSON on the GPU and on PoCL; --peer is peer-gru.py's; --kernels is
`kernelport bench --json` on the GPU (for gru.sequence). Any may be left out: its rows then read
"no data". The targets:
  gru.rollout (E 5, B 1, H 256, S 256, T 50) at least 5x faster than the nn.GRUCell loop and 2x
  faster than one cuDNN nn.GRU call over the same 50 steps without feedback;
  gru.sequence at least 0.7x cuDNN's throughput at (H 1024, B 1024, T 15) and (H 2048, B 256,
  T 15);
  on PoCL, gru.rollout and gru.step at H 256 at least 1x the OpenBLAS host path;
and, reported without a target, the GPU against the best CPU path on the GPU machine. Standard
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
        sys.exit("compare-gru.py: cannot read %s: %s" % (path, e))


def ok_seconds(r):
    """A row's seconds, or None when it failed (a wrong result is never a speed)."""
    if r is None or r.get("status", "KP_OK") != "KP_OK":
        return None
    return r.get("seconds") or r.get("median_s")


def find(doc, case=None, kernel=None, size=None):
    for r in (doc or {}).get("results", []):
        if case is not None and r.get("case") != case:
            continue
        if kernel is not None and r.get("kernel") != kernel:
            continue
        if size is not None and r.get("size") != size:
            continue
        return r
    return None


def us(s):
    return "%.1f" % (s * 1e6) if s else "no data"


def device_name(doc):
    return ((doc or {}).get("device") or {}).get("name", "?")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", help="bench-gru --json on the GPU")
    ap.add_argument("--cpu", help="bench-gru --json on PoCL")
    ap.add_argument("--peer", help="peer-gru.py --json")
    ap.add_argument("--kernels", help="kernelport bench --json on the GPU (gru.sequence)")
    args = ap.parse_args()
    gpu, cpu, peer, kernels = load(args.gpu), load(args.cpu), load(args.peer), load(args.kernels)

    lines = ["| comparison | Kernelport us | peer | peer us | speedup | target | met? |",
             "| --- | ---: | --- | ---: | ---: | --- | --- |"]
    missed = []

    def add(what, ours_s, peer_name, peer_s, want, higher_is_throughput=False):
        # speedup = peer time / our time: above 1 means Kernelport is faster.
        ratio = peer_s / ours_s if ours_s and peer_s else None
        if want is None:
            met = "-"
        elif ratio is None:
            met = "no data"
        else:
            met = "yes" if ratio >= want else "**no**"
        if met == "**no**":
            missed.append(what)
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            what, us(ours_s), peer_name, us(peer_s),
            "%.2fx" % ratio if ratio else "-",
            (">= %gx%s" % (want, " throughput" if higher_is_throughput else "")) if want else "-",
            met))

    for size in ("seed E5 B1 H256 T50", "seed100 E5 B1 H256 T100", "h1024 E5 B1 H1024 T50"):
        ours = ok_seconds(find(gpu, case=size + " sample", kernel="gru.rollout"))
        headline = size.startswith("seed E5")
        add("gru.rollout %s (GPU)" % size, ours, "nn.GRUCell loop, members batched",
            ok_seconds(find(peer, case="rollout " + size, kernel="gru_cell_loop")),
            5 if headline else None)
        add("gru.rollout %s (GPU)" % size, ours, "nn.GRUCell loop, a cell per member",
            ok_seconds(find(peer, case="rollout " + size, kernel="gru_cell_members")), None)
        add("gru.rollout %s (GPU)" % size, ours, "cuDNN nn.GRU, no feedback",
            ok_seconds(find(peer, case="rollout " + size, kernel="cudnn_gru_no_feedback")),
            2 if headline else None)
        add("gru.rollout %s (GPU)" % size, ours, "cuDNN nn.GRU, no feedback, from a CUDA graph",
            ok_seconds(find(peer, case="rollout " + size, kernel="cudnn_gru_no_feedback_graph")),
            None)
        row = find(gpu, case=size + " sample", kernel="gru.rollout")
        add("gru.rollout %s (GPU vs the GPU machine's CPU)" % size, ours,
            (row or {}).get("peer") or "host path", (row or {}).get("peer_seconds"), None)
    for size, text in (("big", "H 1024, B 1024, T 15"), ("h2048", "H 2048, B 256, T 15")):
        ours = ok_seconds(find(kernels, kernel="gru.sequence", size=size))
        add("gru.sequence %s (GPU)" % text, ours, "cuDNN nn.GRU",
            ok_seconds(find(peer, case="sequence " + size, kernel="cudnn_gru")), 0.7, True)
    for case, kernel in (("seed E5 B1 H256 T50 sample", "gru.rollout"),
                         ("seed E5 B1 H256 T50 mean", "gru.rollout"),
                         ("step B=1 H=256 I=321", "gru.step")):
        r = find(cpu, case=case, kernel=kernel)
        add("%s %s (PoCL)" % (kernel, case), ok_seconds(r), (r or {}).get("peer") or "OpenBLAS",
            (r or {}).get("peer_seconds"), 1 if "mean" not in case else None)

    print("GPU: %s; peer: %s (torch %s); CPU: %s." % (
        device_name(gpu), device_name(peer), (peer or {}).get("torch", "?"), device_name(cpu)))
    for doc, label in ((gpu, "GPU"), (cpu, "PoCL")):
        for note in (doc or {}).get("notes", []):
            if note.startswith("gru.rollout tuning"):
                print("%s %s." % (label, note))
    print()
    print("\n".join(lines))
    print()
    print("Targets not met: %s." % (", ".join(missed) if missed else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
