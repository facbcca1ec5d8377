#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws the training curves an example wrote as CSV (a header, the first column the x axis:
step or epoch) into a PNG, one panel per other column.

    build/bin/xor --csv xor.csv && python3 examples/plot-curves.py xor.csv --out xor.png
    python3 examples/plot-curves.py xor.csv --columns loss --log
    build/bin/gru-world-model --predictions p.csv && python3 examples/plot-curves.py p.csv --overlay

Needs matplotlib (Debian: python3-matplotlib)."""
import argparse
import csv
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--out", help="the PNG (default: the CSV's name with .png)")
    ap.add_argument("--columns", help="comma-separated columns to draw (default: all but the first)")
    ap.add_argument("--log", action="store_true", help="logarithmic y axes")
    ap.add_argument("--overlay", action="store_true", help="all columns in one panel")
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot-curves: needs matplotlib (apt-get install python3-matplotlib)", file=sys.stderr)
        return 1
    with open(a.csv) as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        print("plot-curves: %s has no data rows" % a.csv, file=sys.stderr)
        return 1
    head, data = rows[0], rows[1:]
    names = a.columns.split(",") if a.columns else head[1:]
    missing = [n for n in names if n not in head]
    if missing:
        print("plot-curves: no column %s in %s (columns: %s)" % (", ".join(missing), a.csv,
                                                                ", ".join(head)), file=sys.stderr)
        return 1
    x = [float(r[0]) for r in data]
    panels = 1 if a.overlay else len(names)
    fig, axes = plt.subplots(panels, 1, figsize=(7, 4.5 if a.overlay else 2.6 * panels),
                             sharex=True, squeeze=False)
    for i, name in enumerate(names):
        ax = axes[0 if a.overlay else i, 0]
        col = head.index(name)
        # An empty field is a point the column does not have (a forecast before its start).
        y = [float(r[col]) if r[col] else float("nan") for r in data]
        ax.plot(x, y, marker="." if len(data) < 50 else None, label=name)
        ax.set_ylabel("value" if a.overlay else name)
        if a.overlay:
            ax.legend()
        if a.log:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel(head[0])
    fig.suptitle(a.csv)
    fig.tight_layout()
    out = a.out or a.csv.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=110)
    print("plot-curves: wrote %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
