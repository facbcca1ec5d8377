#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a launch from Python costs the host against the same launch from C, in one process.

example.axpy on a few elements (a kernel whose device time is negligible) is launched in batches
of 100 by four paths, alternated round by round so that drift in the machine's load falls on all
of them alike, and the device is drained between batches (untimed):
  c            kp_kernel_launch in a C loop, the arguments converted once (Kernel._time_launches)
  python       kernel(n=..., alpha=..., x=..., y=...) in a Python loop: keyword arguments
               converted by the parameters' kinds on every call
  c-prepared   kp_prepared_launch in a C loop (Prepared._time_launches)
  py-prepared  prepared() in a Python loop
The issue's target (#28): python <= 2 * c + 5 us. Prints a table; --json FILE writes the figures.

  PYTHONPATH=build/python python3 python/bench/bench_launch.py [--rounds 200] [--json out.json]
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

import kernelport as kp

BATCH = 100


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", help="device spec (default: KP_DEVICE, else the manifest's)")
    ap.add_argument("--rounds", type=int, default=200, help="batches per path (default 200)")
    ap.add_argument("--n", type=int, default=256, help="elements (default 256)")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()

    rt = kp.Runtime(device=args.device)
    dev = rt.device()
    k = rt.kernel("example.axpy")
    x = rt.buffer(np.ones(args.n, np.float32))
    y = rt.zeros(args.n)
    n = args.n
    prepared = k.prepare(n=n, alpha=0.5, x=x, y=y)

    def c_batch():
        return k._time_launches(BATCH, n=n, alpha=0.5, x=x, y=y)

    def python_batch():
        t0 = time.perf_counter()
        for _ in range(BATCH):
            k(n=n, alpha=0.5, x=x, y=y)
        return time.perf_counter() - t0

    def c_prepared_batch():
        return prepared._time_launches(BATCH)

    def py_prepared_batch():
        t0 = time.perf_counter()
        for _ in range(BATCH):
            prepared()
        return time.perf_counter() - t0

    paths = {
        "c": c_batch,
        "python": python_batch,
        "c-prepared": c_prepared_batch,
        "py-prepared": py_prepared_batch,
    }
    times = {name: [] for name in paths}
    for name, run in paths.items():  # warm-up: the build, the first recording
        run()
        rt.finish()
    for r in range(args.rounds):
        for name, run in paths.items():
            times[name].append(run() / BATCH)
            rt.finish()
        if sys.stderr.isatty() and (r + 1) % 20 == 0:
            print(f"\rround {r + 1}/{args.rounds}", end="", file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)

    us = {name: statistics.median(v) * 1e6 for name, v in times.items()}
    target = 2 * us["c"] + 5
    print(f"device: {dev.name} ({dev.vendor} {dev.type}, {dev.driver})")
    print(f"example.axpy, n = {n}: host time per launch, median of {args.rounds} batches of {BATCH}")
    print(f"  {'path':<12} {'us':>8}")
    for name, v in us.items():
        print(f"  {name:<12} {v:8.2f}")
    met = us["python"] <= target
    print(
        f"python - c = {us['python'] - us['c']:.2f} us; target python <= 2 c + 5 = {target:.2f} us: "
        + ("met" if met else "NOT met")
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "device": dev.name,
                    "vendor": dev.vendor,
                    "driver": dev.driver,
                    "kernel": "example.axpy",
                    "n": n,
                    "batch": BATCH,
                    "rounds": args.rounds,
                    "median_us": us,
                    "target_us": target,
                    "target_met": met,
                    "python": sys.version.split()[0],
                },
                f,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
