#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The peers of bench-solve (#27): torch.func and SciPy on the same two problems.

    python3 bench/peers/peer-solve.py [--quick] [--json peer-solve.json]

1. Rat43's residual and Jacobian (b1 / (1 + exp(b2 - b3 x))^(1/b4) - y, 4 parameters shared by
   every instance) for n = 10^5, 10^6, 10^7 instances with torch.func.vmap(torch.func.jacfwd(...))
   on CUDA, f64 and f32, timed with CUDA events: bench-solve's rat43 rows, same model, same
   distribution of data (not the same draws).
2. 2D Gaussian fits (a exp(-((u-x0)^2 + (v-y0)^2) / (2 s^2)) + c - z on a 5 x 5 grid, noise 0.01,
   random truths, starts within 10% of them): scipy.optimize.least_squares(method="lm") one fit
   after another on the CPU, up to 1000 fits (100 with --quick); fits/s, the fraction that
   converged and the median of each fit's largest relative parameter error: bench-solve's gauss2d
   rows' figures.
Either part is skipped, with the reason, where its library is missing (torch with CUDA; scipy)."""
import argparse
import statistics
import sys
import time

import numpy as np

import peer_common

SIDE = 5


def rat43_part(quick, results):
    try:
        import torch
        from torch.func import jacfwd, vmap
    except ImportError as e:
        print("peer-solve: rat43: skipped: %s" % e)
        return
    if not torch.cuda.is_available():
        print("peer-solve: rat43: skipped: no CUDA device")
        return
    dev = torch.device("cuda")
    for dtype in (torch.float64, torch.float32):
        for n in (10 ** 5, 10 ** 6) if quick else (10 ** 5, 10 ** 6, 10 ** 7):
            g = torch.Generator(device=dev).manual_seed(7)
            y = 400 + 300 * (2 * torch.rand(n, generator=g, device=dev, dtype=dtype) - 1)
            x = 8 + 7 * (2 * torch.rand(n, generator=g, device=dev, dtype=dtype) - 1)
            b = torch.tensor([700.0, 5.0, 0.75, 1.3], device=dev, dtype=dtype)

            def residual(p, xi, yi):
                return p[0] / (1 + torch.exp(p[1] - p[2] * xi)) ** (1 / p[3]) - yi

            def both(p, xi, yi):
                return residual(p, xi, yi), jacfwd(residual)(p, xi, yi)

            fn = vmap(both, in_dims=(None, 0, 0))
            med, p10, p90 = peer_common.time_events(torch, lambda: fn(b, x, y), quick)
            name = "rat43 r+J n=%d %s" % (n, "f64" if dtype == torch.float64 else "f32")
            print("%-28s torch.func.vmap(jacfwd) %10.1f us  %.3g instances/s" %
                  (name, med * 1e6, n / med))
            results.append({"case": name, "peer": "torch.func.vmap(jacfwd) (CUDA)",
                            "median_s": med, "p10_s": p10, "p90_s": p90,
                            "instances_per_s": n / med})


def gauss2d_problem(rng):
    t = np.array([1.5 + 0.5 * rng.uniform(-1, 1), 2.0 + 0.3 * rng.uniform(-1, 1),
                  2.0 + 0.3 * rng.uniform(-1, 1), 1.0 + 0.2 * rng.uniform(-1, 1),
                  0.1 + 0.05 * rng.uniform(-1, 1)])
    x0 = t * (1 + 0.1 * rng.uniform(-1, 1, 5))
    u, v = np.meshgrid(np.arange(SIDE, dtype=float), np.arange(SIDE, dtype=float))
    u, v = u.ravel(), v.ravel()
    z = t[0] * np.exp(-((u - t[1]) ** 2 + (v - t[2]) ** 2) / (2 * t[3] ** 2)) + t[4]
    z = z + 0.01 * rng.uniform(-1, 1, z.shape)
    return t, x0, u, v, z


def gauss2d_part(quick, results):
    try:
        from scipy.optimize import least_squares
    except ImportError as e:
        print("peer-solve: gauss2d: skipped: %s" % e)
        return
    rng = np.random.default_rng(11)
    fits = 100 if quick else 1000
    problems = [gauss2d_problem(rng) for _ in range(fits)]

    def model(p, u, v, z):
        return p[0] * np.exp(-((u - p[1]) ** 2 + (v - p[2]) ** 2) / (2 * p[3] ** 2)) + p[4] - z

    def jac(p, u, v, z):
        e = np.exp(-((u - p[1]) ** 2 + (v - p[2]) ** 2) / (2 * p[3] ** 2))
        j = np.empty((u.size, 5))
        j[:, 0] = e
        j[:, 1] = p[0] * e * (u - p[1]) / p[3] ** 2
        j[:, 2] = p[0] * e * (v - p[2]) / p[3] ** 2
        j[:, 3] = p[0] * e * ((u - p[1]) ** 2 + (v - p[2]) ** 2) / p[3] ** 3
        j[:, 4] = 1
        return j

    t0 = time.perf_counter()
    converged, errs = 0, []
    for t, x0, u, v, z in problems:
        r = least_squares(model, x0, jac=jac, method="lm", args=(u, v, z))
        converged += r.status > 0
        errs.append(float(np.max(np.abs(r.x - t) / np.abs(t))))
    seconds = time.perf_counter() - t0
    name = "gauss2d fits (%d, scipy lm)" % fits
    print("%-28s %.3g fits/s (1 thread), converged %.3f, median parameter error %.3g" %
          (name, fits / seconds, converged / fits, statistics.median(errs)))
    results.append({"case": name, "peer": "scipy.optimize.least_squares(method='lm'), CPU",
                    "seconds": seconds, "fits_per_s": fits / seconds,
                    "converged_fraction": converged / fits,
                    "median_param_rel_err": statistics.median(errs)})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--json", help="write the results to this file")
    args = ap.parse_args()
    results = []
    rat43_part(args.quick, results)
    gauss2d_part(args.quick, results)
    peer_common.write(args.json, {"benchmark": "peer-solve", "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
