#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns benchmark JSON (from `kernelport bench --json` or a bench/ program's --json) into PNG
charts: each kernel's fraction of the device's measured peaks and, where a peer was timed in the
same run, Kernelport's speedup over it.

    python3 bench/plot.py results/*.json --out docs/img

Needs matplotlib (Debian: python3-matplotlib)."""
import argparse
import json
import os
import sys


def rows_of(doc):
    """(label, fraction_fp32, fraction_bw, speedup or None) for each result of either format."""
    out = []
    for r in doc.get("results", []):
        if r.get("status", "KP_OK") != "KP_OK":
            continue
        label = r.get("kernel", "?") + " " + (r.get("case") or r.get("size") or "")
        out.append((label.strip(), r.get("fraction_fp32"), r.get("fraction_bandwidth"),
                    r.get("speedup_vs_peer"), r.get("peer")))
    return out


def title_of(doc, path):
    dev = doc.get("device", {})
    name = doc.get("benchmark") or "kernelport bench"
    return "%s on %s (%s)" % (name, dev.get("name", "?"), os.path.basename(path))


def plot(path, doc, out_dir, plt):
    rows = rows_of(doc)
    if not rows:
        return None
    labels = [r[0] for r in rows]
    fp32 = [100 * (r[1] or 0) for r in rows]
    bw = [100 * (r[2] or 0) for r in rows]
    peers = [r for r in rows if r[3]]
    ncharts = 2 if peers else 1
    fig, axes = plt.subplots(1, ncharts, figsize=(7 * ncharts, 0.45 * len(rows) + 2),
                             squeeze=False)
    ax = axes[0][0]
    y = range(len(rows))
    ax.barh([i - 0.2 for i in y], bw, height=0.4, label="% of measured bandwidth")
    ax.barh([i + 0.2 for i in y], fp32, height=0.4, label="% of measured FP32")
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("percent of the device's measured peak")
    ax.legend(fontsize=8)
    if peers:
        ax2 = axes[0][1]
        ax2.barh(range(len(peers)), [p[3] for p in peers], color="tab:green")
        ax2.axvline(1.0, color="black", linewidth=0.8)
        ax2.set_yticks(list(range(len(peers))))
        ax2.set_yticklabels(["%s vs %s" % (p[0], p[4]) for p in peers], fontsize=8)
        ax2.invert_yaxis()
        ax2.set_xlabel("speedup over the peer (> 1: Kernelport faster)")
    fig.suptitle(title_of(doc, path), fontsize=10)
    fig.tight_layout()
    png = os.path.join(out_dir, os.path.splitext(os.path.basename(path))[0] + ".png")
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+", help="benchmark JSON files")
    ap.add_argument("--out", default=".", help="directory for the PNG files")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot.py: matplotlib is missing (apt-get install python3-matplotlib)")
    os.makedirs(args.out, exist_ok=True)
    for path in args.json:
        with open(path) as f:
            doc = json.load(f)
        png = plot(path, doc, args.out, plt)
        print(png if png else "%s: no results to plot" % path)


if __name__ == "__main__":
    main()
