#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""examples/gru-world-model's state encoding in NumPy: the same 64 features of the same histories.

    build/bin/gru-world-model --save-data wm.bin ...      # 10,000 curves and the kernel's features
    python3 bench/peers/peer-wm-features.py wm.bin --json peer-wm-features.json

Reads the example's data file (examples/gru-world-model/README.md, "The data file"), encodes the
N histories of W steps with vectorised NumPy (float32 like the kernel; one pass per window, the
EMAs as a loop over time over all histories at once), prints the median time of --repeat runs and
the largest difference from the kernel's features, |numpy - kernel| / (1 + |kernel|). The issue's
target is the kernel at 5x NumPy's speed on the same machine (the example prints the kernel's
device time of its one launch)."""
import argparse
import json
import statistics
import struct
import sys
import time

import numpy as np

WINDOWS = (8, 16, 32, 64, 0)
ALPHAS = (0.5, 0.3, 0.1, 0.05, 0.02, 0.01)
SPIKE = np.float32(0.1)


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"KPWMDATA":
        sys.exit("peer-wm-features: %s is not a gru-world-model data file" % path)
    version, n, w, length = struct.unpack("<4I", data[8:24])
    if version != 1:
        sys.exit("peer-wm-features: %s: version %d, expected 1" % (path, version))
    v = np.frombuffer(data, "<f4", n * length, 24).reshape(n, length)
    feats = np.frombuffer(data, "<f4", n * 64, 24 + 4 * n * length).reshape(n, 64)
    return v[:, :w].copy(), feats


def encode(h):
    n, w = h.shape
    last = h[:, -1:]
    r = h - last
    out = []
    slopes = []
    for k in WINDOWS:
        k = k if k and k < w else w
        seg = r[:, w - k:]
        mean = seg.mean(axis=1, keepdims=True)
        tt = np.arange(k, dtype=np.float32) - np.float32(0.5 * (k - 1))
        d = seg - mean
        slope = (d * tt).sum(axis=1, keepdims=True) / np.float32(k * (k * k - 1) / 12)
        resid = d - slope * tt
        slopes.append(slope[:, 0])
        out += [mean[:, 0], d.std(axis=1), seg.min(axis=1), seg.max(axis=1), slope[:, 0],
                (mean + slope * np.float32(0.5 * (k - 1)))[:, 0],
                np.sqrt((resid * resid).mean(axis=1))]
    for lag in range(1, 13):
        out.append(r[:, max(w - 1 - lag, 0)])
    alphas = np.array(ALPHAS, dtype=np.float32)[:, None]
    e = np.repeat(h[None, :, 0], len(ALPHAS), axis=0)
    for t in range(1, w):
        e += alphas * (h[None, :, t] - e)
    out += list(e - last[None, :, 0])
    d = np.diff(h, axis=1)
    spike = d > SPIKE
    any_spike = spike.any(axis=1)
    last_spike = w - 1 - np.argmax(spike[:, ::-1], axis=1)  # v's index of the last spike
    out += [d.std(axis=1), d.max(axis=1), d.min(axis=1), (d > 0).mean(axis=1),
            spike.sum(axis=1).astype(np.float32),
            np.where(any_spike, (w - 1 - last_spike) / w, 1.0)]
    r0 = max(w - 16, 2)
    second = h[:, r0:] - 2 * h[:, r0 - 1:w - 1] + h[:, r0 - 2:w - 2]
    out += [h[:, -1], r[:, 0], (w - 1 - np.argmin(h, axis=1)) / w, slopes[1] - slopes[3],
            np.abs(second).mean(axis=1)]
    return np.stack([np.asarray(x, dtype=np.float32) for x in out], axis=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    h, kernel = read(a.data)
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        f = encode(h)
        times.append(time.perf_counter() - t0)
    err = np.abs(f.astype(np.float64) - kernel) / (1 + np.abs(kernel))
    worst = int(np.argmax(err.max(axis=0)))
    ms = 1e3 * statistics.median(times)
    print("numpy %s: %d histories of %d steps -> 64 features: %.3f ms (median of %d; min %.3f); "
          "largest difference from the kernel %.2e (feature %d)"
          % (np.__version__, h.shape[0], h.shape[1], ms, a.repeat, 1e3 * min(times),
             float(err.max()), worst))
    if a.json:
        with open(a.json, "w") as out:
            json.dump({"numpy": np.__version__, "histories": h.shape[0], "steps": h.shape[1],
                       "median_ms": ms, "min_ms": 1e3 * min(times),
                       "max_rel_diff": float(err.max())}, out, indent=1)
    return 0 if err.max() <= 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
