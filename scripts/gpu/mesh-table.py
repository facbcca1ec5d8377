# SPDX-License-Identifier: Apache-2.0
"""The mesh rows of bench-solve's JSON files (one per level) as one table: Kernelport against
Ceres (SPARSE_NORMAL_CHOLESKY and CGNR) per level, the steps, whether each converged, the time
to convergence and per step, and the ratios. A ratio against a solve that did not converge (Ceres
cut by --peer-seconds, or either side out of iterations) is marked: it is not a time to
convergence. Usage: mesh-table.py FILE.json..."""
import json
import sys


def rows(paths):
    out = []
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"mesh-table: {path}: {e}", file=sys.stderr)
            continue
        for r in doc.get("results", []):
            if r.get("case", "").startswith("mesh level"):
                out.append(r)
    return out


def main():
    levels = {}
    for r in rows(sys.argv[1:]):
        levels.setdefault(r["case"], []).append(r)
    if not levels:
        print("mesh-table: no mesh rows")
        return 1
    head = ("| case | Kernelport: steps (evaluations), CG, converged, s, ms/step | peer | "
            "peer: steps, linear its, converged, s, ms/step | to convergence | per step |")
    print(head)
    print("|" + "---|" * 6)

    def key(case):
        return int(case.split()[2])

    for case in sorted(levels, key=key):
        for r in levels[case]:
            m = r.get("metrics", {})
            ours = (f"{m.get('steps', 0):.0f} ({m.get('evaluations', 0):.0f}), "
                    f"{m.get('cg_iterations', 0):.0f}, {'yes' if m.get('converged') else 'NO'}, "
                    f"{r['seconds']:.3f}, {m.get('ms_per_step', 0):.2f}")
            peer = r.get("peer") or "-"
            if r.get("peer_seconds") is None:
                print(f"| {case} | {ours} | - | - | - | - |")
                continue
            theirs = (f"{m.get('peer_steps', 0):.0f}, {m.get('peer_linear_iterations', 0):.0f}, "
                      f"{'yes' if m.get('peer_converged') else 'NO'}, {r['peer_seconds']:.3f}, "
                      f"{m.get('peer_ms_per_step', 0):.2f}")
            both = m.get("converged") and m.get("peer_converged")
            ratio = r["peer_seconds"] / r["seconds"] if r["seconds"] > 0 else 0
            step = (m.get("peer_ms_per_step", 0) / m["ms_per_step"]
                    if m.get("ms_per_step") else 0)
            mark = "" if both else " (not both converged)"
            print(f"| {case} | {ours} | {peer} | {theirs} | {ratio:.2f}x{mark} | {step:.2f}x |")
    print("ratio = Ceres's time / Kernelport's (> 1: Kernelport faster); #27's target: >= 20x "
          "Ceres at 10^6 residuals (level 7) on the GPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
