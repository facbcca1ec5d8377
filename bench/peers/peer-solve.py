#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The peers of bench-solve (#27) outside its process: torch.func and SciPy.

    python3 bench/peers/peer-solve.py [--quick] [--json peer-solve.json]
        [--problems DIR [--bench bench-solve.json] [--fits N] [--processes N]]

1. Rat43's residual and Jacobian (b1 / (1 + exp(b2 - b3 x))^(1/b4) - y, 4 parameters shared by
   every instance) for n = 10^5, 10^6, 10^7 instances with torch.func.vmap(torch.func.jacfwd(...))
   on CUDA, f64 and f32, timed with CUDA events: bench-solve's rat43 rows, same model, same
   distribution of data (not the same draws).
2. The edge-length term |x_b - x_a| - L over 30 4^L edges (L = 6, 8, 9: bench-solve's edges rows),
   the same way, each edge's two vertices gathered by index inside the timed call.
3. 2D Gaussian fits (a exp(-((u-x0)^2 + (v-y0)^2) / (2 s^2)) + c - z on a 5 x 5 grid, noise 0.01,
   random truths, starts within 10% of them): the very fits bench-solve solved, as its --dump DIR
   wrote them (DIR/gauss2d-B.f64: per fit the truth, the start and the 25 points' u, v, z), with
   scipy.optimize.least_squares, method "lm" (MINPACK) and "trf", the analytic Jacobian, default
   tolerances, one fit after another on each of --processes processes (default 1), on the first
   --fits of each file (default 1000, 100 with --quick); fits/s (scaled: fits / seconds), the
   fraction that converged (status > 0) and the median of each fit's largest relative parameter
   error, as bench-solve's gauss2d rows. With --bench (bench-solve's --json of the same run), one
   table beside Kernelport's and Ceres's fits/s and the ratios, also in the JSON ("side_by_side").
Either part is skipped, with the reason, where its library (torch with CUDA; scipy) or the dumped
problems are missing."""
import argparse
import glob
import json
import multiprocessing
import os
import re
import statistics
import sys
import time

import numpy as np

import peer_common

SIDE = 5


def torch_cuda(part):
    """torch and a CUDA device, or (None, None) after saying why the part is skipped."""
    try:
        import torch
        import torch.func  # noqa: F401 (jacfwd, vmap)
    except ImportError as e:
        print("peer-solve: %s: skipped: %s" % (part, e))
        return None, None
    if not torch.cuda.is_available():
        print("peer-solve: %s: skipped: no CUDA device" % part)
        return None, None
    return torch, torch.device("cuda")


def time_row(torch, results, case, n, dtype, call, quick):
    """Times call() with CUDA events and records it as bench-solve's row `case` of n instances."""
    med, p10, p90 = peer_common.time_events(torch, call, quick)
    name = "%s r+J n=%d %s" % (case, n, "f64" if dtype == torch.float64 else "f32")
    print("%-28s torch.func.vmap(jacfwd) %10.1f us  %.3g instances/s" % (name, med * 1e6, n / med))
    results.append({"case": name, "peer": "torch.func.vmap(jacfwd) (CUDA)",
                    "median_s": med, "p10_s": p10, "p90_s": p90, "instances_per_s": n / med})


def rat43_part(quick, sizes, results):
    torch, dev = torch_cuda("rat43")
    if not torch:
        return
    jacfwd, vmap = torch.func.jacfwd, torch.func.vmap
    for dtype in (torch.float64, torch.float32):
        for n in sizes or ((10 ** 5, 10 ** 6) if quick else (10 ** 5, 10 ** 6, 10 ** 7)):
            g = torch.Generator(device=dev).manual_seed(7)
            y = 400 + 300 * (2 * torch.rand(n, generator=g, device=dev, dtype=dtype) - 1)
            x = 8 + 7 * (2 * torch.rand(n, generator=g, device=dev, dtype=dtype) - 1)
            b = torch.tensor([700.0, 5.0, 0.75, 1.3], device=dev, dtype=dtype)

            def residual(p, xi, yi):
                return p[0] / (1 + torch.exp(p[1] - p[2] * xi)) ** (1 / p[3]) - yi

            def both(p, xi, yi):
                return residual(p, xi, yi), jacfwd(residual)(p, xi, yi)

            fn = vmap(both, in_dims=(None, 0, 0))
            time_row(torch, results, "rat43", n, dtype, lambda: fn(b, x, y), quick)


def edges_part(quick, levels, results):
    """The edge-length term |x_b - x_a| - L of an icosphere's edges, bench-solve's edges rows (the
    same counts of edges and vertices at levels 6, 8 and 9; random edges between random points of
    the sphere, not the mesh's: the work per edge is the same), the two vertices gathered by index
    inside the timed call as bench-solve's kernel gathers them."""
    torch, dev = torch_cuda("edges")
    if not torch:
        return
    jacfwd, vmap = torch.func.jacfwd, torch.func.vmap
    for dtype in (torch.float64, torch.float32):
        for level in levels or ((5, 7) if quick else (6, 8, 9)):
            n, nv = 30 * 4 ** level, 10 * 4 ** level + 2
            g = torch.Generator(device=dev).manual_seed(11)
            x = torch.randn(nv, 3, generator=g, device=dev, dtype=dtype)
            x = x / x.norm(dim=1, keepdim=True)
            e = torch.randint(0, nv, (n, 2), generator=g, device=dev)
            L = torch.full((n,), 0.9, device=dev, dtype=dtype)

            def residual(a, b, li):
                return torch.linalg.vector_norm(b - a) - li

            def both(a, b, li):
                return residual(a, b, li), jacfwd(residual, argnums=(0, 1))(a, b, li)

            fn = vmap(both)
            time_row(torch, results, "edges", n, dtype,
                     lambda: fn(x[e[:, 0]], x[e[:, 1]], L), quick)


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


def fit_chunk(job):
    """Fits rows of a dump with one method: (converged, [largest relative error per fit])."""
    from scipy.optimize import least_squares
    fits, method = job
    converged, errs = 0, []
    for f in fits:
        t, x0, pts = f[:5], f[5:10], f[10:].reshape(SIDE * SIDE, 3)
        r = least_squares(model, x0, jac=jac, method=method, args=(pts[:, 0], pts[:, 1], pts[:, 2]))
        converged += r.status > 0
        errs.append(float(np.max(np.abs(r.x - t) / np.abs(t))))
    return converged, errs


def gauss2d_part(args, results):
    try:
        import scipy
        import scipy.optimize  # noqa: F401
    except ImportError as e:
        print("peer-solve: gauss2d: skipped: %s" % e)
        return
    if not args.problems:
        print("peer-solve: gauss2d: skipped: no --problems DIR (bench-solve --dump DIR writes it)")
        return
    paths = sorted(glob.glob(os.path.join(args.problems, "gauss2d-*.f64")),
                   key=lambda p: int(re.search(r"gauss2d-(\d+)\.f64$", p).group(1)))
    if not paths:
        print("peer-solve: gauss2d: skipped: no gauss2d-*.f64 in %s" % args.problems)
        return
    fits = args.fits or (100 if args.quick else 1000)
    procs = max(1, args.processes)
    pool = multiprocessing.Pool(procs) if procs > 1 else None
    for path in paths:
        B = int(re.search(r"gauss2d-(\d+)\.f64$", path).group(1))
        problems = np.fromfile(path, dtype=np.float64).reshape(-1, 85)[:fits]
        n = len(problems)
        for method in ("lm", "trf"):
            jobs = [(chunk, method) for chunk in np.array_split(problems, procs)]
            t0 = time.perf_counter()
            parts = pool.map(fit_chunk, jobs) if pool else [fit_chunk(j) for j in jobs]
            seconds = time.perf_counter() - t0
            converged = sum(c for c, _ in parts)
            errs = [e for _, es in parts for e in es]
            name = "gauss2d fits B=%d f64" % B
            print("%-28s scipy %-3s %10.4g fits/s (%d of its fits, %d process%s), converged %.3f, "
                  "median parameter error %.3g" % (name, method, n / seconds, n, procs,
                                                   "es" if procs > 1 else "", converged / n,
                                                   statistics.median(errs)))
            results.append({"case": name, "fits": n, "processes": procs,
                            "peer": "scipy %s least_squares(method='%s'), CPU" %
                                    (scipy.__version__, method),
                            "seconds": seconds, "fits_per_s": n / seconds,
                            "converged_fraction": converged / n,
                            "median_param_rel_err": statistics.median(errs)})
    if pool:
        pool.close()


def side_by_side(bench_path, results):
    """bench-solve's gauss2d rows (Kernelport, Ceres) beside SciPy's: a table and its rows."""
    try:
        with open(bench_path) as f:
            bench = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("peer-solve: cannot read %s: %s" % (bench_path, e))
    rows = []
    print("\n%-26s %12s %12s %12s %12s %10s %10s" % ("fits (f64)", "Kernelport", "Ceres",
                                                     "scipy lm", "scipy trf", "KP/Ceres",
                                                     "KP/lm"))
    for r in bench.get("results", []):
        if not r["case"].startswith("gauss2d") or r.get("status") != "KP_OK":
            continue
        m = r.get("metrics", {})
        ours, ceres = m.get("fits_per_s"), m.get("ceres_fits_per_s")
        sp = {x["peer"].split("method='")[1][:-len("'), CPU")]: x["fits_per_s"]
              for x in results if x["case"] == r["case"] and "fits_per_s" in x}
        row = {"case": r["case"], "kernelport_fits_per_s": ours, "ceres_fits_per_s": ceres,
               "scipy_lm_fits_per_s": sp.get("lm"), "scipy_trf_fits_per_s": sp.get("trf"),
               "kernelport_vs_ceres": ours / ceres if ours and ceres else None,
               "kernelport_vs_scipy_lm": ours / sp["lm"] if ours and sp.get("lm") else None}
        rows.append(row)

        def f(v, spec="%12.4g"):
            return spec % v if v is not None else "%12s" % "-"
        print("%-26s %s %s %s %s %s %s" % (
            r["case"], f(ours), f(ceres), f(sp.get("lm")), f(sp.get("trf")),
            f(row["kernelport_vs_ceres"], "%9.2fx"), f(row["kernelport_vs_scipy_lm"], "%9.2fx")))
    print("(Kernelport on %s; Ceres: %s)" % (bench.get("device", {}).get("name", "?"),
                                            next((n for n in bench.get("notes", [])
                                                  if n.startswith("peer:")), "not built in")))
    return rows


def int_list(text):
    return [int(v) for v in text.split(",")] if text else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--problems", help="the folder bench-solve --dump wrote the fits to")
    ap.add_argument("--bench", help="bench-solve's JSON of the same run: a side-by-side table")
    ap.add_argument("--fits", type=int, help="fits per file (default 1000; 100 with --quick)")
    ap.add_argument("--processes", type=int, default=1, help="fit on N processes (default 1)")
    ap.add_argument("--instances", help="Rat43 instance counts, comma-separated (bench-solve's)")
    ap.add_argument("--edge-levels", help="icosphere levels of the edge rows (bench-solve's)")
    ap.add_argument("--parts", default="rat43,edges,gauss2d", help="comma-separated parts")
    args = ap.parse_args()
    results = []
    parts = args.parts.split(",")
    if "rat43" in parts:
        rat43_part(args.quick, int_list(args.instances), results)
    if "edges" in parts:
        edges_part(args.quick, int_list(args.edge_levels), results)
    if "gauss2d" in parts:
        gauss2d_part(args, results)
    doc = {"benchmark": "peer-solve", "results": results}
    if args.bench:
        doc["side_by_side"] = side_by_side(args.bench, results)
    peer_common.write(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
