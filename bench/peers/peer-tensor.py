#!/usr/bin/env python3
"""bench-tensor and its peers in one run: NumPy and PyTorch on a CPU device, PyTorch on CUDA.

    python3 bench/peers/peer-tensor.py --bench build/bin/bench-tensor --quick --json out.json
    PYTHONUNBUFFERED=1 python3 bench/peers/peer-tensor.py --bench build-gpu/bin/bench-tensor \\
        --device nvidia --json results/bench-tensor-nvidia.json

Runs bench-tensor (Kernelport's figures, each checked against a host loop in double) with
--dump DIR, then times the peers on the inputs written there and checks Kernelport's outputs,
also written there, against each peer's:
  - on a CPU device (PoCL): NumPy (one thread: its ufuncs and reductions do not thread) and
    PyTorch on the CPU with as many threads as this process may use (PoCL uses them all), each
    call's wall time on the host, with `out=` so that no call allocates;
  - on a GPU: PyTorch on CUDA, each call between CUDA events after a short GPU sleep (the figure
    is the device's, as Kernelport's OpenCL event spans are).
A peer that is not importable (or CUDA absent) is named in the output as not measured. The
cases: add with a broadcast row [N, N] + [N], exp on M elements, sum over the last and over the
first axis of [N, N]; N = 4096, M = 2^24, or with --quick N = 1024, M = 2^20. Kernelport's time
is its kernel's device time; its wall time (launch and wait) is in the table as well. A peer's
result differs from Kernelport's by at most what both are allowed (add: 1/2 ulp each; exp: 4 ulp
each; sum: n 2^-24 sum |x| each): a row that does not is marked WRONG and shows no ratio.

The JSON is bench-tensor's (the harness's schema), each row's "peer", "peer_seconds" and
"speedup_vs_peer" those of the first peer (NumPy on a CPU, PyTorch on CUDA), and "peers" every
peer's figures. Targets (issue #23): on a GPU, every case at least 1.0x PyTorch and 85% of the
measured bandwidth; on a CPU, at least 1.0x NumPy and 0.8x PyTorch. Standard library, NumPy and
PyTorch where present."""
import argparse
import ast
import json
import os
import platform
import subprocess
import sys
import tempfile

from peer_common import time_events, time_host, write

# bench-tensor's cases: the tag its case names start with and its dump is named after, and the
# inputs it reads.
CASES = [("add", ("a", "b")), ("exp", ("x",)), ("sum_last", ("a",)), ("sum_first", ("a",))]
NOT_BUILT = ["permute [64,128,56,56]->(0,2,3,1)", "softmax [4096,4096]",
             "cross-entropy fwd+bwd [8192,1000]", "AdamW over 100 tensors (25M parameters)"]
U = 2.0 ** -24  # float32's unit roundoff


def read_npy(path):
    """(shape, little-endian float32 bytes) of a version-1 .npy file bench-tensor wrote."""
    with open(path, "rb") as f:
        head = f.read(10)
        if head[:6] != b"\x93NUMPY" or head[6] != 1:
            raise ValueError("%s: not a version-1 .npy file" % path)
        meta = ast.literal_eval(f.read(head[8] | head[9] << 8).decode("latin1"))
        if meta["descr"] != "<f4" or meta["fortran_order"]:
            raise ValueError("%s: not little-endian C-order float32" % path)
        return tuple(meta["shape"]), f.read()


def bound_terms(tag, n_red):
    """Per-element bound on |Kernelport - peer|: (relative to |peer|, times sum |x| along the
    reduced axis)."""
    return {"add": (2 * U, 0.0), "exp": (8 * 2 * U, 0.0)}.get(tag, (0.0, 2.0 * n_red * U))


class NumpyPeer:
    def __init__(self, np, max_case_s):
        self.np, self.max_case_s = np, max_case_s
        self.name = "NumPy %s (1 thread)" % np.__version__

    def array(self, shape, raw):
        return self.np.frombuffer(raw, dtype="<f4").reshape(shape).copy()

    def empty(self, shape):
        return self.np.empty(shape, dtype=self.np.float32)

    def call(self, tag, ins, y):
        np = self.np
        if tag == "add":
            return lambda: np.add(ins[0], ins[1], out=y)
        if tag == "exp":
            return lambda: np.exp(ins[0], out=y)
        axis = 1 if tag == "sum_last" else 0
        return lambda: np.sum(ins[0], axis=axis, out=y)

    def time(self, fn):
        return time_host(fn, False, self.max_case_s)

    def errors(self, tag, ins, ours, theirs):
        """max |ours - theirs|, that over max |theirs|, and the largest error over its bound."""
        np = self.np
        d = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
        d[np.isnan(ours) | np.isnan(theirs)] = np.inf
        rel, mag = bound_terms(tag, ins[0].shape[-1])
        bound = rel * np.abs(theirs.astype(np.float64)) + np.finfo(np.float32).tiny
        if mag:
            bound += mag * np.abs(ins[0].astype(np.float64)).sum(axis=1 if tag == "sum_last" else 0)
        top = float(np.abs(theirs).max())
        return float(d.max()), float(d.max()) / top if top else float(d.max()), float(
            (d / bound).max())


class TorchPeer:
    def __init__(self, torch, device, max_case_s):
        self.torch, self.device, self.max_case_s = torch, device, max_case_s
        if device == "cuda":
            name = torch.cuda.get_device_properties(torch.device("cuda")).name
            self.name = "PyTorch %s CUDA (%s)" % (torch.__version__, name)
        else:
            self.name = "PyTorch %s CPU (%d threads)" % (torch.__version__, torch.get_num_threads())

    def array(self, shape, raw):
        t = self.torch.frombuffer(bytearray(raw), dtype=self.torch.float32).reshape(shape)
        return t.to(self.device)

    def empty(self, shape):
        return self.torch.empty(shape, dtype=self.torch.float32, device=self.device)

    def call(self, tag, ins, y):
        torch = self.torch
        if tag == "add":
            return lambda: torch.add(ins[0], ins[1], out=y)
        if tag == "exp":
            return lambda: torch.exp(ins[0], out=y)
        dim = 1 if tag == "sum_last" else 0
        return lambda: torch.sum(ins[0], dim=dim, out=y)

    def time(self, fn):
        if self.device == "cuda":
            return time_events(self.torch, fn, False)
        return time_host(fn, False, self.max_case_s)

    def errors(self, tag, ins, ours, theirs):
        torch = self.torch
        ours, theirs = ours.double(), theirs.double()
        d = (ours - theirs).abs()
        d[torch.isnan(ours) | torch.isnan(theirs)] = float("inf")
        rel, mag = bound_terms(tag, ins[0].shape[-1])
        bound = rel * theirs.abs() + torch.finfo(torch.float32).tiny
        if mag:
            bound += mag * ins[0].double().abs().sum(dim=1 if tag == "sum_last" else 0)
        top = float(theirs.abs().max())
        err = float(d.max())
        return err, err / top if top else err, float((d / bound).max())


def make_peers(device_type, max_case_s, absent):
    """The peers for Kernelport's device type; what cannot be measured goes to `absent`."""
    peers = []
    if device_type == "cpu":
        try:
            import numpy
            peers.append(NumpyPeer(numpy, max_case_s))
        except ImportError as e:
            absent.append("NumPy: not importable (%s)" % e)
    try:
        import torch
    except ImportError as e:
        absent.append("PyTorch: not importable (%s)" % e)
        return peers
    if device_type == "cpu":
        torch.set_num_threads(len(os.sched_getaffinity(0)))
        peers.append(TorchPeer(torch, "cpu", max_case_s))
    elif torch.cuda.is_available():
        peers.append(TorchPeer(torch, "cuda", max_case_s))
    else:
        absent.append("PyTorch %s: CUDA is not available" % torch.__version__)
    return peers


def target(device_type, peer_index):
    """(minimum ratio against the peer, minimum fraction of the measured bandwidth or None)."""
    if device_type == "cpu":
        return (1.0 if peer_index == 0 else 0.8), None
    return 1.0, 0.85


def measure(peers, row, tag, inputs, dump, device_type):
    """The peers' figures on one case, and their check against Kernelport's output."""
    shape, raw = read_npy(os.path.join(dump, tag + ".npy"))
    out = []
    for i, p in enumerate(peers):
        ins = [p.array(*inputs[name]) for name in dict(CASES)[tag]]
        y = p.empty(shape)
        fn = p.call(tag, ins, y)
        med, p10, p90 = p.time(fn)
        fn()
        err, rel, worst = p.errors(tag, ins, p.array(shape, raw), y)
        want, want_bw = target(device_type, i)
        r = {"peer": p.name, "seconds": med, "p10_s": p10, "p90_s": p90,
             "gbs": row["bytes"] / med * 1e-9, "max_abs_err": err, "max_rel_err": rel,
             "max_err_over_bound": worst, "target_ratio": want}
        ok = row.get("status") == "KP_OK" and row.get("seconds")
        if worst > 1:
            r["note"] = "!! WRONG RESULT: Kernelport and %s differ by %.3g times what both " \
                        "are allowed" % (p.name, worst)
        if ok and worst <= 1:
            r["speedup_vs_peer"] = med / row["seconds"]
            wall = (row.get("metrics") or {}).get("wall_s")
            r["speedup_wall_vs_peer"] = med / wall if wall else None
            met = r["speedup_vs_peer"] >= want
            if want_bw is not None:
                frac = row.get("fraction_bandwidth")
                met = met and frac is not None and frac >= want_bw
            r["met"] = met
        else:
            r["speedup_vs_peer"] = None
            r["met"] = False
        out.append(r)
        del ins, y
    return out


def run_bench(args, dump):
    cmd = [args.bench, "--dump", dump, "--json", os.path.join(dump, "ours.json")]
    if args.device:
        cmd += ["--device", args.device]
    if args.manifest:
        cmd += ["--manifest", args.manifest]
    if args.quick:
        cmd.append("--quick")
    print("$ " + " ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    path = os.path.join(dump, "ours.json")
    if not os.path.exists(path):
        sys.exit("peer-tensor.py: %s wrote no JSON (exit %d)" % (args.bench, rc))
    with open(path) as f:
        return rc, json.load(f)


def fmt(v, spec):
    return spec % v if v is not None else "-"


def print_table(doc, absent):
    head = ["CASE", "KERNEL", "US", "WALL US", "GB/s", "% BW", "PEER", "PEER US", "PEER GB/s",
            "VS PEER", "VS PEER WALL", "TARGET", "MET", "MAX ABS ERR", "MAX REL ERR"]
    lines = [head]
    peak = doc.get("peak")
    for row in doc["results"]:
        ok = row.get("status") == "KP_OK" and row.get("seconds")
        wall = (row.get("metrics") or {}).get("wall_s")
        ours = [row["case"], row["kernel"],
                "%.1f" % (row["seconds"] * 1e6) if ok else "!! " + row.get("status", "?"),
                fmt(wall * 1e6 if ok and wall else None, "%.1f"), fmt(row.get("gbs"), "%.2f"),
                fmt(row["fraction_bandwidth"] * 100 if row.get("fraction_bandwidth") is not None
                    else None, "%.1f")]
        for p in row.get("peers") or [{}]:
            want = p.get("target_ratio")
            wanted = ("%.1fx" % want if want else "-") + (
                ", 85%% BW" if want and (doc.get("device") or {}).get("type") != "cpu" else "")
            lines.append(ours + [
                p.get("peer", "-"), fmt(p["seconds"] * 1e6 if "seconds" in p else None, "%.1f"),
                fmt(p.get("gbs"), "%.2f"), fmt(p.get("speedup_vs_peer"), "%.2fx"),
                fmt(p.get("speedup_wall_vs_peer"), "%.2fx"), wanted,
                "-" if "met" not in p else ("yes" if p["met"] else "NO"),
                fmt(p.get("max_abs_err"), "%.3g"), fmt(p.get("max_rel_err"), "%.3g")])
            ours = [""] * len(ours)
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    right = {2, 3, 4, 5, 7, 8, 9, 10, 13, 14}
    dev = doc.get("device") or {}
    print()
    print("bench-tensor with peers on %s (%s %s, %s)" % (
        dev.get("name", "?"), dev.get("vendor", "?"), dev.get("type", "?"), dev.get("driver", "?")))
    print("peaks: %s" % ("%.1f GB/s (measured %s)" % (peak["bandwidth_gbs"], peak["measured"])
                         if peak else "not measured"))
    print()
    for line in lines:
        print("  ".join(str(c).rjust(widths[i]) if i in right else str(c).ljust(widths[i])
                        for i, c in enumerate(line)).rstrip())
    print()
    for row in doc["results"]:
        for p in row.get("peers") or []:
            if p.get("note"):
                print("%s vs %s: %s" % (row["case"], p["peer"], p["note"]))
    for a in absent:
        print("not measured: " + a)
    print("not built yet, so not timed: " + "; ".join(NOT_BUILT))
    print("US: Kernelport's device time (OpenCL events), median; WALL US: its launch and wait; "
          "PEER US: %s; VS PEER: peer time / Kernelport time (above 1: Kernelport faster); "
          "GB/s: each input read and the output written once (data that stay in the caches "
          "can pass the measured peak)" % (
              "wall time on the host" if dev.get("type") == "cpu" else "CUDA events"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", help="the bench-tensor binary (default: build-gpu/bin/bench-tensor "
                    "where the GPU scripts built it, else build/bin/bench-tensor)")
    ap.add_argument("--device", help="Kernelport's device (bench-tensor --device)")
    ap.add_argument("--manifest", help="bench-tensor --manifest")
    ap.add_argument("--quick", action="store_true", help="N = 1024, M = 2^20")
    ap.add_argument("--json", help="write the joined results to this file")
    ap.add_argument("--keep", metavar="DIR", help="dump into DIR and keep it (default: a "
                    "temporary folder, removed)")
    args = ap.parse_args()
    if not args.bench:
        gpu = "build-gpu/bin/bench-tensor"
        args.bench = gpu if os.path.exists(gpu) else "build/bin/bench-tensor"
    with tempfile.TemporaryDirectory(prefix="bench-tensor-") as tmp:
        dump = args.keep or tmp
        os.makedirs(dump, exist_ok=True)
        rc, doc = run_bench(args, dump)
        device_type = (doc.get("device") or {}).get("type")
        absent = []
        # --quick shrinks the sizes only: bench-tensor times both with its full rule, so do
        # the peers.
        peers = make_peers(device_type, 2.0, absent)
        inputs = {name: read_npy(os.path.join(dump, name + ".npy")) for name in ("a", "b", "x")}
        for row in doc["results"]:
            tag = row["case"].split()[0]
            if tag not in dict(CASES) or not os.path.exists(os.path.join(dump, tag + ".npy")):
                continue
            row["peers"] = measure(peers, row, tag, inputs, dump, device_type)
            if row["peers"]:
                first = row["peers"][0]
                row["peer"], row["peer_seconds"] = first["peer"], first["seconds"]
                row["speedup_vs_peer"] = first["speedup_vs_peer"]
    doc["peers_method"] = ("wall time on the host, out= arrays, median after warm-up"
                           if device_type == "cpu" else
                           "CUDA-event spans after a GPU sleep, median after warm-up")
    doc["peers_absent"] = absent
    doc["not_built"] = NOT_BUILT
    doc["python"] = platform.python_version()
    doc["loadavg"] = list(os.getloadavg())
    print_table(doc, absent)
    write(args.json, doc)
    wrong = any(p.get("note") for row in doc["results"] for p in row.get("peers") or [])
    return rc or int(wrong)


if __name__ == "__main__":
    raise SystemExit(main())
