#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench-tensor and its peers in one run: NumPy and PyTorch on a CPU device, PyTorch on CUDA.

    python3 bench/peers/peer-tensor.py --bench build/bin/bench-tensor --quick --json out.json
    PYTHONUNBUFFERED=1 python3 bench/peers/peer-tensor.py --bench build-gpu/bin/bench-tensor \\
        --device nvidia --json results/bench-tensor-nvidia.json

Runs bench-tensor (Kernelport's figures, each checked against a host loop in double) with
--dump DIR, then times the peers on the inputs written there and checks Kernelport's outputs,
also written there, against each peer's:
  - on a CPU device (PoCL): NumPy (one thread: its ufuncs and reductions do not thread) and
    PyTorch on the CPU with as many threads as this process may use (PoCL uses them all), and
    with one (a machine shared with other work slows PyTorch's threads waiting for each other
    far more than it slows one), each call's wall time on the host, with `out=` where the call
    has it, so that few calls allocate;
  - on a GPU: PyTorch on CUDA, each call between CUDA events after a GPU sleep (the figure is the
    device's, as Kernelport's OpenCL event spans are; the calls that launch many kernels from the
    host, cross-entropy's forward and backward and the optimizer's step, get a longer sleep).
A peer that is not importable (or CUDA absent) is named in the output as not measured. The
cases (N = 4096, or 1024 with --quick):
  add [N, N] + [N]; exp on N^2; the sum over the last and over the first axis of [N, N];
  permute [64, 128, 56, 56] -> (0, 2, 3, 1) ([16, 128, 28, 28]) into a contiguous tensor;
  softmax [N, N] over the last axis (NumPy: max, subtract, exp, sum, divide);
  cross-entropy forward and backward on [8192, 1000] logits ([2048, 1000]): PyTorch's
  F.cross_entropy and .backward(), NumPy's the same formulas in place;
  AdamW over bench-optim's model, 100 tensors of 25M parameters (2.5M), one step from the dumped
  state: torch.optim.AdamW(fused=True) on CUDA, (foreach=True) on the CPU, NumPy's in-place
  formulas over the flat arena (optim_model.py);
  and, without targets: fill and uniform on N^2 (uniform's values are not compared: other
  generators), mul's backward with b [N] broadcast (da = dy b, db = the sum over rows of dy a:
  what autograd runs).
A peer's result differs from Kernelport's by at most what both are allowed (twice the bound
bench-tensor checks against, evaluated at the peer's values or the inputs): a row that does not
is marked WRONG and shows no ratio.

The JSON is bench-tensor's (the harness's schema), each row's "peer", "peer_seconds" and
"speedup_vs_peer" those of the first peer (NumPy on a CPU, PyTorch on CUDA), and "peers" every
peer's figures. Targets (issue #23): on a GPU, every case of the issue at least 1.0x PyTorch and
85% of the measured bandwidth (permute 1.0x alone; AdamW 1.2x PyTorch's fused AdamW); on a CPU,
at least 1.0x NumPy on the elementwise ops and reductions (add, exp, both sums) and 0.8x PyTorch
on every case of the issue. Standard library, NumPy and PyTorch where present."""
import argparse
import ast
import json
import os
import platform
import subprocess
import sys
import tempfile

from optim_model import numpy_adamw, torch_adamw
from peer_common import time_events, time_host, write

U = 2.0 ** -24  # float32's unit roundoff
# bench-tensor's cases: the tag its case names start with, the dumps it reads, the dumps of its
# outputs.
CASES = {
    "add": (("a", "b"), ("add",)),
    "exp": (("x",), ("exp",)),
    "sum_last": (("a",), ("sum_last",)),
    "sum_first": (("a",), ("sum_first",)),
    "permute": (("permute_x",), ("permute",)),
    "softmax": (("a",), ("softmax",)),
    "cross_entropy": (("logits", "labels"), ("cross_entropy_loss", "cross_entropy_dlogits")),
    "adamw": (("adamw_p", "adamw_g", "adamw_m", "adamw_v", "adamw_segments"), ("adamw",)),
    "fill": ((), ("fill",)),
    "uniform": ((), ("uniform",)),
    "mul_backward": (("x", "a", "b"), ("mul_backward_da", "mul_backward_db")),
}
ISSUE_CASES = {"add", "exp", "sum_last", "sum_first", "permute", "softmax", "cross_entropy",
               "adamw"}
ELEMENTWISE_AND_REDUCTIONS = {"add", "exp", "sum_last", "sum_first"}
# Calls whose host side is longer than peer_common's default GPU sleep covers.
LONG_HOST_SIDE = {"cross_entropy": 1000000, "adamw": 2000000}


def read_npy(path):
    """(shape, dtype "<f4" or "<i4", little-endian bytes) of a version-1 .npy file bench-tensor
    wrote."""
    with open(path, "rb") as f:
        head = f.read(10)
        if head[:6] != b"\x93NUMPY" or head[6] != 1:
            raise ValueError("%s: not a version-1 .npy file" % path)
        meta = ast.literal_eval(f.read(head[8] | head[9] << 8).decode("latin1"))
        if meta["descr"] not in ("<f4", "<i4") or meta["fortran_order"]:
            raise ValueError("%s: not little-endian C-order float32 or int32" % path)
        return tuple(meta["shape"]), meta["descr"], f.read()


class NumpyOps:
    """What the bounds need, over NumPy arrays."""

    def __init__(self, np):
        self.np = np
        self.abs, self.exp, self.log, self.sqrt, self.isnan = np.abs, np.exp, np.log, np.sqrt, \
            np.isnan
        self.inf = np.inf

    def f64(self, a):
        return self.np.asarray(a, dtype=self.np.float64)

    def sum(self, a, axis):
        return a.sum(axis=axis, keepdims=True)

    def amax(self, a, axis):
        return a.max(axis=axis, keepdims=True)

    def rows(self, a, index):
        """a[r, index[r]] for each row r, as a column."""
        return a[self.np.arange(a.shape[0]), index.astype(self.np.int64)][:, None]

    def onehot(self, index, cols):
        out = self.np.zeros((len(index), cols))
        out[self.np.arange(len(index)), index.astype(self.np.int64)] = 1
        return out

    def where(self, c, a, b):
        return self.np.where(c, a, b)

    def full_like(self, a, v):
        return self.np.full(a.shape, v)

    def top(self, a):
        return float(a.max())


class TorchOps(NumpyOps):
    """The same over PyTorch tensors (on their device)."""

    def __init__(self, torch):
        self.torch = torch
        self.abs, self.exp, self.log, self.sqrt, self.isnan = torch.abs, torch.exp, torch.log, \
            torch.sqrt, torch.isnan
        self.inf = float("inf")

    def f64(self, a):
        return a.double()

    def sum(self, a, axis):
        return a.sum(dim=axis, keepdim=True)

    def amax(self, a, axis):
        return self.torch.amax(a, dim=axis, keepdim=True)

    def rows(self, a, index):
        return a[self.torch.arange(a.shape[0], device=a.device), index.long()][:, None]

    def onehot(self, index, cols):
        out = self.torch.zeros((len(index), cols), dtype=self.torch.float64, device=index.device)
        out[self.torch.arange(len(index), device=index.device), index.long()] = 1
        return out

    def where(self, c, a, b):
        return self.torch.where(c, a, b)

    def full_like(self, a, v):
        return self.torch.full(a.shape, v, dtype=self.torch.float64, device=a.device)

    def top(self, a):
        return float(a.max())


def bounds(tag, X, ins, theirs):
    """Per output, per element: what Kernelport and the peer may each err by, added (twice
    bench-tensor's bounds, at the peer's values or the inputs), float64; inf where not compared
    (AdamW's padding between tensors)."""
    tiny = 2.0 ** -126
    if tag == "add":
        return [2 * U * X.abs(theirs[0]) + tiny]
    if tag == "exp":
        return [2 * 8 * U * X.abs(theirs[0]) + tiny]
    if tag in ("sum_last", "sum_first"):
        a = X.abs(ins[0])
        axis = 1 if tag == "sum_last" else 0
        return [(2 * a.shape[axis] * U * X.sum(a, axis) + tiny).reshape(theirs[0].shape)]
    if tag in ("permute", "fill"):
        return [X.full_like(theirs[0], tiny)]
    if tag == "softmax":
        return [2 * (ins[0].shape[1] + 16) * U * X.abs(theirs[0]) + tiny]
    if tag == "cross_entropy":
        x, labels = ins
        R, C = x.shape
        m = X.amax(x, 1)
        lse = X.log(X.sum(X.exp(x - m), 1))
        p = X.exp(x - m - lse)
        xl = X.rows(x, labels)
        loss_rows = m + lse - xl
        mag = X.sum(X.abs(m) + X.abs(lse) + X.abs(xl), 0).reshape(())
        loss = 2 * U * ((C + 32) * mag + R * X.sum(X.abs(loss_rows), 0).reshape(())) / R
        return [loss + tiny, 2 * (C + 32) * U * (p + X.onehot(labels, C)) / R + tiny]
    if tag == "adamw":
        from optim_model import LR, BETA1, BETA2, EPS
        x, g, m0, v0, seg = ins
        m = BETA1 * m0 + (1 - BETA1) * g
        v = BETA2 * v0 + (1 - BETA2) * g * g
        den = X.sqrt(v) / (1 - BETA2) ** 0.5 + EPS
        step_size = LR / (1 - BETA1)
        b = 2 * U * (2 * X.abs(x) + 16 * step_size * (X.abs(m0) + X.abs(g) + X.abs(m)) / den)
        inside = X.full_like(x, 0.0) > 1
        for off, n in seg.tolist():
            inside[int(off):int(off) + int(n)] = True
        return [X.where(inside, b + tiny, X.full_like(x, X.inf))]
    if tag == "mul_backward":
        dy, a, b = ins
        N = dy.shape[0]
        dy = dy.reshape(a.shape)
        return [2 * U * X.abs(theirs[0]) + tiny,
                (2 * (N + 1) * U * X.sum(X.abs(dy * a), 0) + tiny).reshape(theirs[1].shape)]
    return None  # uniform: other generators, nothing to compare


class NumpyPeer:
    def __init__(self, np, max_case_s):
        self.np, self.max_case_s, self.ops = np, max_case_s, NumpyOps(np)
        self.name = "NumPy %s (1 thread)" % np.__version__

    def array(self, shape, dtype, raw):
        return self.np.frombuffer(raw, dtype=dtype).reshape(shape).copy()

    def prepare(self, tag, ins):
        """(the call to time, a function giving its outputs as they stand)."""
        np = self.np
        if tag in ("add", "exp", "fill", "uniform"):
            y = np.empty(self.size, dtype=np.float32)
            rng = np.random.default_rng(7)
            fn = {"add": lambda: np.add(ins[0], ins[1], out=y),
                  "exp": lambda: np.exp(ins[0], out=y),
                  "fill": lambda: y.fill(1.5),
                  "uniform": lambda: rng.random(out=y, dtype=np.float32)}[tag]
            return fn, lambda: [y]
        if tag in ("sum_last", "sum_first"):
            axis = 1 if tag == "sum_last" else 0
            y = np.empty(ins[0].shape[1 - axis], dtype=np.float32)
            return lambda: np.sum(ins[0], axis=axis, out=y), lambda: [y]
        if tag == "permute":
            x = ins[0]
            y = np.empty((x.shape[0], x.shape[2], x.shape[3], x.shape[1]), dtype=np.float32)
            return lambda: np.copyto(y, x.transpose(0, 2, 3, 1)), lambda: [y]
        if tag == "softmax":
            a = ins[0]
            y = np.empty_like(a)

            def softmax():
                np.subtract(a, a.max(axis=1, keepdims=True), out=y)
                np.exp(y, out=y)
                np.divide(y, y.sum(axis=1, keepdims=True), out=y)
            return softmax, lambda: [y]
        if tag == "cross_entropy":
            x, labels = ins
            R = x.shape[0]
            d = np.empty_like(x)
            rows = np.arange(R)
            loss = np.zeros((), dtype=np.float32)

            def ce():
                m = x.max(axis=1, keepdims=True)
                np.subtract(x, m, out=d)
                np.exp(d, out=d)
                s = d.sum(axis=1, keepdims=True)
                loss[()] = np.mean(np.log(s[:, 0]) + m[:, 0] - x[rows, labels])
                np.divide(d, s, out=d)
                d[rows, labels] -= 1
                np.multiply(d, np.float32(1.0 / R), out=d)
            return ce, lambda: [loss, d]
        if tag == "adamw":
            p, g, m, v = (a.copy() for a in ins[:4])
            return numpy_adamw(np, p, g, m, v, np.empty_like(p)), lambda: [p]
        if tag == "mul_backward":
            dy, a, b = ins
            dy = dy.reshape(a.shape)
            da, t = np.empty_like(a), np.empty_like(a)
            db = np.empty_like(b)

            def mul_backward():
                np.multiply(dy, b, out=da)
                np.multiply(dy, a, out=t)
                np.sum(t, axis=0, out=db)
            return mul_backward, lambda: [da, db]
        raise ValueError(tag)

    def time(self, tag, fn):
        return time_host(fn, False, self.max_case_s)


class TorchPeer:
    def __init__(self, torch, device, max_case_s, threads=None):
        self.torch, self.device, self.max_case_s = torch, device, max_case_s
        self.ops, self.threads = TorchOps(torch), threads
        if device == "cuda":
            name = torch.cuda.get_device_properties(torch.device("cuda")).name
            self.name = "PyTorch %s CUDA (%s)" % (torch.__version__, name)
        else:
            self.name = "PyTorch %s CPU (%d thread%s)" % (torch.__version__, threads,
                                                          "s" if threads > 1 else "")

    def use(self):
        """Sets PyTorch's thread count to this peer's (a process-wide setting)."""
        if self.threads:
            self.torch.set_num_threads(self.threads)

    def array(self, shape, dtype, raw):
        torch = self.torch
        kind = torch.int32 if dtype == "<i4" else torch.float32
        return torch.frombuffer(bytearray(raw), dtype=kind).reshape(shape).to(self.device)

    def prepare(self, tag, ins):
        torch = self.torch

        def empty(shape):
            return torch.empty(shape, dtype=torch.float32, device=self.device)
        if tag in ("add", "exp", "fill", "uniform"):
            y = empty(self.size)
            fn = {"add": lambda: torch.add(ins[0], ins[1], out=y),
                  "exp": lambda: torch.exp(ins[0], out=y),
                  "fill": lambda: y.fill_(1.5),
                  "uniform": lambda: y.uniform_()}[tag]
            return fn, lambda: [y]
        if tag in ("sum_last", "sum_first"):
            dim = 1 if tag == "sum_last" else 0
            y = empty(ins[0].shape[1 - dim])
            return lambda: torch.sum(ins[0], dim=dim, out=y), lambda: [y]
        if tag == "permute":
            x = ins[0]
            y = empty((x.shape[0], x.shape[2], x.shape[3], x.shape[1]))
            return lambda: y.copy_(x.permute(0, 2, 3, 1)), lambda: [y]
        if tag == "softmax":
            y = empty(ins[0].shape)
            return lambda: torch.softmax(ins[0], 1, out=y), lambda: [y]
        if tag == "cross_entropy":
            logits = ins[0].clone().requires_grad_(True)
            labels = ins[1].long()
            held = {}

            def ce():
                logits.grad = None
                held["loss"] = torch.nn.functional.cross_entropy(logits, labels)
                held["loss"].backward()
            return ce, lambda: [held["loss"].detach(), logits.grad]
        if tag == "adamw":
            x, g, m, v, seg = ins
            cuts = [(int(off), int(n)) for off, n in seg.tolist()]
            params = [torch.nn.Parameter(x[o:o + n].clone()) for o, n in cuts]
            for p, (o, n) in zip(params, cuts):
                p.grad = g[o:o + n].clone()
            kw = {"fused": True} if self.device == "cuda" else {"foreach": True}
            opt = torch_adamw(torch, params, [m[o:o + n].clone() for o, n in cuts],
                              [v[o:o + n].clone() for o, n in cuts], **kw)

            def arena():
                out = torch.zeros_like(x)
                for p, (o, n) in zip(params, cuts):
                    out[o:o + n] = p.detach()
                return [out]
            return opt.step, arena
        if tag == "mul_backward":
            dy, a, b = ins
            dy = dy.reshape(a.shape)
            da, t, db = empty(a.shape), empty(a.shape), empty(b.shape)

            def mul_backward():
                torch.mul(dy, b, out=da)
                torch.mul(dy, a, out=t)
                torch.sum(t, 0, out=db)
            return mul_backward, lambda: [da, db]
        raise ValueError(tag)

    def time(self, tag, fn):
        if self.device == "cuda":
            return time_events(self.torch, fn, False,
                               sleep_cycles=LONG_HOST_SIDE.get(tag, 100000))
        return time_host(fn, False, self.max_case_s)


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
        # As many threads as PoCL uses; and one, since on a machine shared with other work a
        # thread that waits for a descheduled one slowed a PyTorch call 53-fold (1.13, 2 cores).
        cpus = len(os.sched_getaffinity(0))
        peers.append(TorchPeer(torch, "cpu", max_case_s, cpus))
        if cpus > 1:
            peers.append(TorchPeer(torch, "cpu", max_case_s, 1))
    elif torch.cuda.is_available():
        peers.append(TorchPeer(torch, "cuda", max_case_s))
    else:
        absent.append("PyTorch %s: CUDA is not available" % torch.__version__)
    return peers


def target(device_type, tag, peer):
    """(minimum ratio against the peer, minimum fraction of the measured bandwidth), each None
    where the issue sets none."""
    if tag not in ISSUE_CASES:
        return None, None
    if device_type == "cpu":
        if isinstance(peer, NumpyPeer):
            return (1.0 if tag in ELEMENTWISE_AND_REDUCTIONS else None), None
        return 0.8, None
    if tag == "adamw":
        return 1.2, None
    return 1.0, (None if tag == "permute" else 0.85)


def compare(peer, tag, ins, ours, theirs):
    """max |ours - theirs|, that over max |theirs|, and the largest difference over what both
    are allowed, over every output; None when the outputs are not comparable."""
    X = peer.ops
    ins64 = [X.f64(a) for a in ins]
    ours = [X.f64(a) for a in ours]
    theirs = [X.f64(a).reshape(o.shape) for a, o in zip(theirs, ours)]
    allowed = bounds(tag, X, ins64, theirs)
    if allowed is None:
        return None
    err = rel = worst = 0.0
    for o, t, b in zip(ours, theirs, allowed):
        compared = b != X.inf
        d = X.abs(o - t)
        d = X.where(X.isnan(o) | X.isnan(t), X.full_like(d, X.inf), d)
        d = X.where(compared, d, X.full_like(d, 0.0))
        ratio = d / b
        top = X.top(X.where(compared, X.abs(t), X.full_like(d, 0.0)))
        e = X.top(d)
        err = max(err, e)
        rel = max(rel, e / top if top else e)
        worst = max(worst, X.top(ratio))
    return err, rel, worst


def measure(peers, row, tag, dump, device_type):
    """The peers' figures on one case, and their check against Kernelport's output."""
    in_names, out_names = CASES[tag]
    inputs = [read_npy(os.path.join(dump, n + ".npy")) for n in in_names]
    outputs = [read_npy(os.path.join(dump, n + ".npy")) for n in out_names]
    out = []
    for p in peers:
        p.size = outputs[0][0]
        if hasattr(p, "use"):
            p.use()
        ins = [p.array(*i) for i in inputs]
        fn, result = p.prepare(tag, ins)
        fn()  # the first call's result is the one compared (AdamW steps once from the dump)
        theirs = result()
        checked = compare(p, tag, ins, [p.array(*o) for o in outputs], theirs)
        med, p10, p90 = p.time(tag, fn)
        want, want_bw = target(device_type, tag, p)
        r = {"peer": p.name, "seconds": med, "p10_s": p10, "p90_s": p90,
             "gbs": row["bytes"] / med * 1e-9, "target_ratio": want, "target_bandwidth": want_bw}
        ok = row.get("status") == "KP_OK" and row.get("seconds")
        if checked is None:
            r["note"] = "results not compared (%s)" % (
                "other generators" if tag == "uniform" else "no bound")
            worst = 0.0
        else:
            r["max_abs_err"], r["max_rel_err"], worst = checked
            r["max_err_over_bound"] = worst
            if not worst <= 1:
                r["note"] = "!! WRONG RESULT: Kernelport and %s differ by %.3g times what both " \
                            "are allowed" % (p.name, worst)
        if ok and worst <= 1:
            r["speedup_vs_peer"] = med / row["seconds"]
            wall = (row.get("metrics") or {}).get("wall_s")
            r["speedup_wall_vs_peer"] = med / wall if wall else None
            if want is not None:
                met = r["speedup_vs_peer"] >= want
                if want_bw is not None:
                    frac = row.get("fraction_bandwidth")
                    met = met and frac is not None and frac >= want_bw
                r["met"] = met
        else:
            r["speedup_vs_peer"] = None
            if want is not None:
                r["met"] = False
        out.append(r)
        del ins, fn, result, theirs
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
            want, want_bw = p.get("target_ratio"), p.get("target_bandwidth")
            wanted = ("%.1fx" % want if want else "-") + (
                ", %d%% BW" % round(want_bw * 100) if want_bw else "")
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
    print("US: Kernelport's device time (OpenCL events), median; WALL US: its launch and wait; "
          "PEER US: %s; VS PEER: peer time / Kernelport time (above 1: Kernelport faster); "
          "GB/s: each input read and each output written once (data that stay in the caches "
          "can pass the measured peak)" % (
              "wall time on the host" if dev.get("type") == "cpu" else "CUDA events"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", help="the bench-tensor binary (default: build-gpu/bin/bench-tensor "
                    "where the GPU scripts built it, else build/bin/bench-tensor)")
    ap.add_argument("--device", help="Kernelport's device (bench-tensor --device)")
    ap.add_argument("--manifest", help="bench-tensor --manifest")
    ap.add_argument("--quick", action="store_true", help="bench-tensor --quick: the CPU sizes")
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
        for row in doc["results"]:
            tag = row["case"].split()[0]
            if tag not in CASES or not all(os.path.exists(os.path.join(dump, n + ".npy"))
                                           for n in CASES[tag][1]):
                continue
            row["peers"] = measure(peers, row, tag, dump, device_type)
            if row["peers"]:
                first = row["peers"][0]
                row["peer"], row["peer_seconds"] = first["peer"], first["seconds"]
                row["speedup_vs_peer"] = first["speedup_vs_peer"]
    doc["peers_method"] = ("wall time on the host, out= arrays where the call has them, median "
                           "after warm-up"
                           if device_type == "cpu" else
                           "CUDA-event spans after a GPU sleep, median after warm-up")
    doc["peers_absent"] = absent
    doc["python"] = platform.python_version()
    doc["loadavg"] = list(os.getloadavg())
    print_table(doc, absent)
    write(args.json, doc)
    wrong = any((p.get("note") or "").startswith("!!") for row in doc["results"]
                for p in row.get("peers") or [])
    return rc or int(wrong)


if __name__ == "__main__":
    raise SystemExit(main())
